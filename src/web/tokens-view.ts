// The account tokens page and the page that shows a new token's secret, once. Pure functions from data
// to HTML, in the layout and escaping of the authorization server's pages (src/oauth/html.ts).
import type { Scope } from '../authz/scopes.ts';
import type { SerializedToken } from '../domain/tokens.ts';
import { TOKEN_LIMITS } from '../domain/tokens.ts';
import { html, page } from '../oauth/html.ts';
import { groupScopeEntries, settingsHeader } from '../oauth/pages.ts';

export interface TokenForm {
  name: string;
  scopes: string[];
  expiresInDays: string;
}

export interface TokensView {
  userHandle: string;
  csrf: string;
  signoutCsrf: string;
  tokens: SerializedToken[];
  /** Scopes a new token may carry (the person's ceiling); only these are offered. */
  grantable: Scope[];
  errors: string[];
  values: TokenForm;
  notice?: string;
}

const day = (iso: string | null, none: string) => (iso ? iso.slice(0, 10) : none);

function tokenCard(token: SerializedToken, csrf: string) {
  return html`<section class="card" aria-labelledby="token-${token.id}">
  <h3 id="token-${token.id}">${token.name} <span class="badge ${token.status}">${token.status}</span></h3>
  <dl class="facts">
    <dt>Prefix</dt><dd><code>${token.tokenPrefix}…</code></dd>
    <dt>Scopes</dt><dd><code>${token.scopes.join(' ')}</code></dd>
    <dt>Created</dt><dd>${day(token.createdAt, '')}</dd>
    <dt>Last used</dt><dd>${day(token.lastUsedAt, 'never')}</dd>
    <dt>${token.status === 'revoked' ? 'Revoked' : token.status === 'expired' ? 'Expired' : 'Expires'}</dt>
    <dd>${token.status === 'revoked' ? day(token.revokedAt, '') : day(token.expiresAt, 'never')}</dd>
  </dl>
  ${
    token.status === 'active'
      ? html`<form method="post" action="/settings/tokens/${encodeURIComponent(token.id)}/revoke">
    <input type="hidden" name="csrf" value="${csrf}">
    <button type="submit" class="danger">Revoke ${token.name}</button>
  </form>`
      : html``
  }
</section>`;
}

function createForm(view: TokensView) {
  const chosen = new Set(view.values.scopes);
  return html`<form method="post" action="/settings/tokens" class="card">
  <h2>New token</h2>
  <input type="hidden" name="csrf" value="${view.csrf}">
  ${
    view.errors.length > 0
      ? html`<div class="card error" role="alert" id="token-errors"><ul>${view.errors.map((e) => html`<li>${e}</li>`)}</ul></div>`
      : html``
  }
  <label for="token-name">Name</label>
  <input type="text" id="token-name" name="name" required maxlength="${TOKEN_LIMITS.nameMaxLength}"
    value="${view.values.name}" placeholder="CI on github.com/acme/website">
  <p class="muted">The token acts as you, within the scopes you choose and your roles.</p>
  ${groupScopeEntries(view.grantable).map(
    (group) =>
      html`<fieldset><legend>${group.label}</legend>${group.items.map(
        (item) =>
          html`<label class="check"><input type="checkbox" name="scopes" value="${item.scope}"${
            chosen.has(item.scope) ? html` checked` : html``
          }> <span>${item.description} <code class="muted">${item.scope}</code></span></label>`,
      )}</fieldset>`,
  )}
  <label for="token-days">Expires after (days)</label>
  <input type="number" id="token-days" name="expiresInDays" required min="${TOKEN_LIMITS.minLifetimeDays}"
    max="${TOKEN_LIMITS.maxLifetimeDays}" step="1" value="${view.values.expiresInDays}">
  <p class="muted">${TOKEN_LIMITS.minLifetimeDays} to ${TOKEN_LIMITS.maxLifetimeDays} days; tokens always expire.</p>
  <div class="actions"><button type="submit" class="primary">Create token</button></div>
</form>`;
}

export function tokensPage(view: TokensView): string {
  return page(
    'Account tokens',
    html`${settingsHeader('/settings/tokens', view.userHandle, view.signoutCsrf)}
<h1>Account tokens</h1>
<p>Tokens let scripts and agents use the API as <strong>@${view.userHandle}</strong> with a bearer header.
Each one is shown only once, when it is created.</p>
${view.notice ? html`<div class="card" role="status">${view.notice}</div>` : html``}
<h2>Your tokens</h2>
${view.tokens.length === 0 ? html`<p>You have no tokens yet.</p>` : view.tokens.map((t) => tokenCard(t, view.csrf))}
${createForm(view)}`,
  );
}

export interface TokenCreatedView {
  userHandle: string;
  signoutCsrf: string;
  token: SerializedToken;
  secret: string;
}

export function tokenCreatedPage(view: TokenCreatedView): string {
  return page(
    'Token created',
    html`${settingsHeader('/settings/tokens', view.userHandle, view.signoutCsrf)}
<h1>Token “${view.token.name}” created</h1>
<div class="card" role="status">
  <p><strong>Copy it now: it will not be shown again.</strong> Select it (one click selects all) and copy it
  into your secret store. If you lose it, revoke it and create another.</p>
  <code class="secret" id="token-secret">${view.secret}</code>
</div>
<dl class="facts">
  <dt>Scopes</dt><dd><code>${view.token.scopes.join(' ')}</code></dd>
  <dt>Expires</dt><dd>${day(view.token.expiresAt, 'never')}</dd>
</dl>
<p>Use it as <code>Authorization: Bearer ${view.token.tokenPrefix}…</code></p>
<p><a class="button" href="/settings/tokens">Back to your tokens</a></p>`,
  );
}
