// The sign-in choices (shown on /signin and on the OAuth login step), and the pages of sign-in results
// and sessions (the sign-in methods page is src/web/pages/identities.ts). Pure functions from data to HTML, in the one layout of src/web/html.ts.

import { type Html, html, page } from '../html.ts';

export interface ProviderButton {
  id: string;
  label: string;
}

/** One link per enabled provider, and the organization sign-in form (asks for a work e-mail). */
export function signInChoices(providers: ProviderButton[], next: string): Html {
  const q = `next=${encodeURIComponent(next)}`;
  return html`<ul class="users providers">${providers.map(
    (p) => html`<li><a class="button primary" href="/signin/${p.id}?${q}">Sign in with ${p.label}</a></li>`,
  )}</ul>
<form method="get" action="/signin/org">
  <input type="hidden" name="next" value="${next}">
  <h2>Sign in with your organization</h2>
  <label for="work-email">Work e-mail</label>
  <input type="text" inputmode="email" id="work-email" name="email" autocomplete="email" required
    autocapitalize="none" spellcheck="false">
  <div class="actions"><button type="submit">Continue with your organization</button></div>
</form>`;
}

/**
 * The sign-in choices. `failed`: the development form came back refused (its field says why); `signedOut`:
 * the person just signed out here, which the page confirms (a fixed sentence: the address cannot add words).
 */
export function signInPage(
  providers: ProviderButton[],
  next: string,
  options: { devForm?: Html; failed?: boolean; signedOut?: boolean } = {},
): string {
  const purpose = purposeOf(next);
  return page(
    options.failed ? 'Error: Sign in' : options.signedOut ? 'Signed out' : 'Sign in',
    html`<h1>Sign in to the localization service</h1>
${options.signedOut ? html`<div class="card" role="status">You are signed out.</div>` : html``}
${purpose ? html`<p>${purpose}</p>` : html``}
${signInChoices(providers, next)}
${options.devForm ?? html``}`,
  );
}

/** A sign-in that did not work: what happened, and a way back. */
export function signInFailedPage(message: string, next: string): string {
  return page(
    'Sign-in failed',
    html`<h1>You are not signed in</h1>
<div class="card error" role="alert">${message}</div>
<p><a class="button primary" href="/signin?next=${encodeURIComponent(next)}">Back to sign-in</a></p>`,
  );
}

/**
 * Linking another provider that did not work: the person is still signed in, so the way back is their
 * sign-in methods page.
 */
export function linkFailedPage(message: string): string {
  return page(
    'Not linked',
    html`<h1>No sign-in method was linked</h1>
<div class="card error" role="alert">${message}</div>
<p><a class="button primary" href="/settings/identities">Back to sign-in methods</a></p>`,
  );
}

/**
 * A sign-out form from a page of an earlier session (another tab, signed out and in again
 * since): not acted on, since its CSRF token is not this session's, but asked again with a form that is.
 */
export function staleFormPage(view: {
  question: string;
  action: string;
  button: string;
  csrf: string;
  back: string;
}): string {
  return page(
    'Form expired',
    html`<h1>${view.question}</h1>
<div class="card" role="status">The button you pressed was on a page from an earlier sign-in, so nothing was done yet.</div>
<form method="post" action="${view.action}">
  <input type="hidden" name="csrf" value="${view.csrf}">
  <div class="actions"><button type="submit" class="primary">${view.button}</button>
  <a class="button" href="${view.back}">Cancel</a></div>
</form>`,
  );
}

/** Why the person is asked to sign in, when the page they are going back to says more than "sign in". */
function purposeOf(next: string): string | undefined {
  if (next.startsWith('/invitations/answer')) return 'Sign in to answer your invitation to an organization.';
  if (next.startsWith('/oauth/interaction/'))
    return 'Sign in to continue to the app that sent you here; you will be asked what it may do.';
  return undefined;
}
