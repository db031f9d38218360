// The sign-in choices (shown on /signin and on the OAuth login step), and the pages of sign-in results (the
// sign-in methods and sessions pages are src/web/pages/). Pure functions from data to HTML, in the one
// layout of src/web/html.ts.

import { type Html, html, page } from '../html.ts';

export interface ProviderButton {
  id: string;
  label: string;
}

/** Why "Sign in with your organization" could not go on with an e-mail: fixed sentences, chosen by code. */
const ORG_SIGN_IN_ERRORS = {
  invalid: 'Enter your work e-mail address.',
  unknown: 'No organization here signs in people with that e-mail domain.',
  no_provider:
    'The organization of that e-mail domain has no sign-in of its own set up at the moment: sign in another way, or ask one of its admins.',
} as const;
export type OrgSignInError = keyof typeof ORG_SIGN_IN_ERRORS;

export const isOrgSignInError = (code: unknown): code is OrgSignInError =>
  typeof code === 'string' && Object.hasOwn(ORG_SIGN_IN_ERRORS, code);

/**
 * One link per enabled provider, and the organization sign-in form (asks for a work e-mail). `org`: that form
 * sent back with what was typed and why it did not go on, the message at the field, which has the focus.
 */
export function signInChoices(
  providers: ProviderButton[],
  next: string,
  org?: { email: string; error: OrgSignInError },
): Html {
  const q = `next=${encodeURIComponent(next)}`;
  return html`<ul class="users providers">${providers.map(
    (p) => html`<li><a class="button primary" href="/signin/${p.id}?${q}">Sign in with ${p.label}</a></li>`,
  )}</ul>
<form method="get" action="/signin/org">
  <input type="hidden" name="next" value="${next}">
  <h2>Sign in with your organization</h2>
  <label for="work-email">Work e-mail</label>
  <input type="text" inputmode="email" id="work-email" name="email" autocomplete="email" required
    autocapitalize="none" spellcheck="false" value="${org?.email ?? ''}"${org ? html` aria-invalid="true" aria-describedby="work-email-error" autofocus` : html``}>
  ${org ? html`<p class="field-error" id="work-email-error">${ORG_SIGN_IN_ERRORS[org.error]}</p>` : html``}
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
  options: {
    devForm?: Html;
    failed?: boolean;
    signedOut?: boolean;
    org?: { email: string; error: OrgSignInError };
  } = {},
): string {
  const purpose = purposeOf(next);
  return page(
    options.failed || options.org ? 'Error: Sign in' : options.signedOut ? 'Signed out' : 'Sign in',
    html`<h1>Sign in to the localization service</h1>
${options.signedOut ? html`<div class="card" role="status">You are signed out.</div>` : html``}
${purpose ? html`<p>${purpose}</p>` : html``}
${signInChoices(providers, next, options.org)}
${options.devForm ?? html``}`,
  );
}

/** A sign-in that did not work: what happened, and a way back. */
export function signInFailedPage(message: string, next: string): string {
  return page(
    'Sign-in failed',
    html`<h1>You are not signed in</h1>
<div class="card error" role="alert">${message}</div>
<p><a class="button primary" href="${backToSignIn(next)}">Back to sign-in</a></p>`,
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

/** Where "Back to sign-in" goes: an app's own sign-in step (it names the app and can cancel), or /signin. */
function backToSignIn(next: string): string {
  return next.startsWith('/oauth/interaction/') ? next : `/signin?next=${encodeURIComponent(next)}`;
}
