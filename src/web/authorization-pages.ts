// The pages themselves: sign-in (development), consent and errors. Pure functions from
// data to HTML; routes live in interactions.ts (the web pages of src/web have their own templates).
import { isScope, SCOPES, type Scope } from '../authz/scopes.ts';
import { foreignName } from './foreign-name.ts';
import { type Html, html, page } from './html.ts';
import { type OrgSignInError, type ProviderButton, signInChoices } from './sign-in/pages.ts';

/** The object of every scope (`audit` of `audit:read`) has its label: a new object without one fails to compile. */
type ScopeObject = Scope extends `${infer Object}:${string}` ? Object : never;
const OBJECT_LABELS: Record<ScopeObject, string> = {
  user: 'Your profile',
  account: 'Accounts',
  organization: 'Organizations',
  members: 'Organization members and invitations',
  project: 'Projects',
  voice: 'Voice settings',
  glossary: 'Glossary',
  model: 'Account models',
  token: 'Account tokens',
  apps: 'Connected apps',
  audit: 'Audit log',
};

/** Scopes grouped by the object they act on, in the vocabulary's order, each with its plain words. */
export function groupScopeEntries(
  scopes: Iterable<string>,
): { label: string; items: { scope: Scope; description: string }[] }[] {
  const wanted = new Set(scopes);
  const groups = new Map<string, { scope: Scope; description: string }[]>();
  for (const scope of Object.keys(SCOPES)) {
    if (!wanted.has(scope) || !isScope(scope)) continue;
    const object = scope.split(':')[0]!;
    groups.set(object, [...(groups.get(object) ?? []), { scope, description: SCOPES[scope] }]);
  }
  return [...groups].map(([object, items]) => ({
    label: OBJECT_LABELS[object as ScopeObject] ?? object,
    items,
  }));
}

/** The same groups with the plain words only. */
function groupScopes(scopes: Iterable<string>): { label: string; items: string[] }[] {
  return groupScopeEntries(scopes).map((g) => ({ label: g.label, items: g.items.map((i) => i.description) }));
}

function scopeList(scopes: Iterable<string>): Html {
  return html`${groupScopes(scopes).map(
    (group) => html`<h3>${group.label}</h3><ul>${group.items.map((item) => html`<li>${item}</li>`)}</ul>`,
  )}`;
}

export interface LoginView {
  action: string;
  abortAction: string;
  csrf: string;
  clientName: string;
  handles: string[];
  devLogin: boolean;
  /** Enabled identity providers, and the path the sign-in returns to (this interaction). */
  providers: ProviderButton[];
  next: string;
  error?: string;
  handleValue?: string;
  /** "Sign in with your organization" sent back here with what was typed and why it did not go on. */
  org?: { email: string; error: OrgSignInError };
}

export function loginPage(view: LoginView): string {
  const error = view.error
    ? html`<div class="card error" role="alert" id="handle-error">${view.error}</div>`
    : html``;
  const body = view.devLogin
    ? html`
<p>Development sign-in: choose a local user or create one. This page does not exist in production.</p>
${error}
${
  view.handles.length > 0
    ? html`<form method="post" action="${view.action}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <h2>Existing users</h2>
  <ul class="users">${view.handles.map(
    (h) => html`<li><button type="submit" name="handle" value="${h}">@${h}</button></li>`,
  )}</ul>
</form>`
    : html``
}
<form method="post" action="${view.action}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <input type="hidden" name="create" value="1">
  <h2>New user</h2>
  <label for="new-handle">Handle</label>
  <p class="muted" id="handle-help">Lowercase letters, digits and hyphens; 2 to 39 characters, starting with a letter.</p>
  <input type="text" id="new-handle" name="handle" required minlength="2" maxlength="39" autocomplete="username"
    autocapitalize="none" spellcheck="false" value="${view.handleValue ?? ''}"
    aria-describedby="handle-help${view.error ? ' handle-error' : ''}"${view.error ? html` aria-invalid="true" autofocus` : html``}>
  <div class="actions"><button type="submit" class="primary">Create and sign in</button></div>
</form>`
    : html``;
  return page(
    view.error || view.org ? 'Error: Sign in' : 'Sign in',
    html`<h1>Sign in to continue to <bdi>${foreignName(view.clientName)}</bdi></h1>
${signInChoices(view.providers, view.next, view.org)}
${body}
<form method="post" action="${view.abortAction}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <div class="actions"><button type="submit">Cancel</button></div>
</form>`,
  );
}

export interface ConsentView {
  action: string;
  /** Signs the person out and asks who is authorizing (someone else at this browser). */
  switchAction: string;
  csrf: string;
  clientName: string;
  clientId: string;
  redirectTarget: string;
  /** Plain words for where the redirect goes, when the host alone says little. */
  redirectNote?: string;
  userHandle: string;
  requested: string[];
  alreadyGranted: string[];
  /** The person approved this app before, but the app cannot prove it is the same one (a public client). */
  reconfirm?: boolean;
}

/** The host of a client ID metadata document URL (a client named by an https URL); none for other IDs. */
function documentHost(clientId: string): string | undefined {
  if (!clientId.startsWith('https://')) return undefined;
  return URL.parse(clientId)?.host;
}

export function consentPage(view: ConsentView): string {
  return page(
    `Allow ${foreignName(view.clientName)}?`,
    html`<h1>Allow <strong><bdi>${foreignName(view.clientName)}</bdi></strong> to access your account?</h1>
<p>Signed in as <strong>@${view.userHandle}</strong>.</p>
<form method="post" action="${view.switchAction}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <button type="submit">Not you? Sign out and use another account</button>
</form>
<div class="card">
  <p>After you decide, you will be sent back to <strong><code>${view.redirectTarget}</code></strong>${view.redirectNote ? html` (${view.redirectNote})` : html``}.</p>
  ${documentHost(view.clientId) ? html`<p>It identifies itself with a document published by <strong>${documentHost(view.clientId)!}</strong>.</p>` : html``}
  <p class="muted">Client ID: <code>${view.clientId}</code></p>
</div>
${
  view.reconfirm
    ? html`<p class="muted">You allowed this app before. It has no secret to prove it is the same app, so we ask each time it connects.</p>`
    : html``
}
<h2>${view.alreadyGranted.length > 0 ? 'It asks for more access:' : 'It will be able to:'}</h2>
<p class="muted">It acts as you: in your own account, and in each of your organizations as far as your role there allows.</p>
${scopeList(view.requested)}
${
  view.alreadyGranted.length > 0
    ? html`<details><summary>Already allowed</summary>${scopeList(view.alreadyGranted)}</details>`
    : html``
}
<p class="muted">You can disconnect this app at any time from <a href="/settings/apps">Connected apps</a>.</p>
<form method="post" action="${view.action}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <div class="actions">
    <button type="submit" name="decision" value="approve" class="primary">Approve</button>
    <button type="submit" name="decision" value="deny">Deny</button>
  </div>
</form>`,
  );
}

/**
 * What a person is told when an authorization cannot go on, by the OAuth error it ended in (oidc-provider's,
 * or a step of ours). Its code and developer wording stay on the page, folded away, for whoever reports it.
 */
const ERROR_WORDS: Record<string, { title: string; explain: string }> = {
  invalid_client: {
    title: 'This app is not known here',
    explain:
      'The app that sent you here is not registered with this service, or its registration was removed. Do not sign in through this link unless you trust where it came from; if you use this app, connect it again from the app itself.',
  },
  invalid_redirect_uri: {
    title: 'This app asked to send you somewhere it did not register',
    explain:
      'Nothing was sent anywhere. The link may not come from the app it names: do not sign in through it. If you use this app, tell its maker.',
  },
  invalid_request: {
    title: 'The app’s request could not be used',
    explain:
      'The app sent an incomplete or malformed request. This is not a problem with your account: start again from the app, and if it happens again, tell its maker.',
  },
  step_over: {
    title: 'This step is over',
    explain:
      'This page belongs to an authorization that was already answered, or that expired (after an hour). If your app is still waiting, start again from the app.',
  },
  form_expired: {
    title: 'This form has expired',
    explain: 'Nothing was done. Go back, reload the page and try again.',
  },
  access_denied: {
    title: 'Not allowed',
    explain: 'This is not something you can do here.',
  },
  temporarily_unavailable: {
    title: 'The service is busy',
    explain: 'Nothing was done. Try again in a moment.',
  },
};
const UNKNOWN_ERROR = {
  title: 'Something went wrong',
  explain: 'Start again from the app you came from. If it happens again, tell the app’s maker.',
};

/** `error` the code shown to developers, `kind` what the person is told (the code's own words by default). */
export function errorPage(error: string, description?: string, kind = error): string {
  const words = ERROR_WORDS[kind] ?? UNKNOWN_ERROR;
  return page(
    words.title,
    html`<h1>${words.title}</h1>
<div class="card error" role="alert"><p>${words.explain}</p></div>
<details><summary>Details for the app’s developer</summary><p><code>${error}</code>${description ? html`: ${description}` : html``}</p></details>
<p><a href="/dashboard">Go to your dashboard</a></p>`,
  );
}
