// Development sign-in (DEV_LOGIN, refused in production by the configuration): pick a local user by
// handle or create one, no provider involved. Used by /signin and by the OAuth sign-in step.
import type { IncomingHttpHeaders } from 'node:http';
import express, { Router } from 'express';
import type { ServiceContext } from '../../context.ts';
import { devSignInUser } from '../../identity/dev-users.ts';
import type { Sessions } from '../../identity/sessions.ts';
import { requireUtf8Form } from '../../lib/utf8-body.ts';
import { html } from '../html.ts';

const DEV_LOGIN_PATH = '/signin/dev';

/** The form on /signin: a handle, signed in (or created and signed in) at once. */
export function devLoginForm(next: string, error?: string, handle = '') {
  return html`<h2>Development sign-in</h2>
<p class="muted">Choose a local user or create one. This does not exist in production.</p>
${error ? html`<div class="card error" role="alert" id="handle-error">${error}</div>` : html``}
<form method="post" action="${DEV_LOGIN_PATH}">
  <input type="hidden" name="next" value="${next}">
  <label for="new-handle">Handle</label>
  <input type="text" id="new-handle" name="handle" required minlength="2" maxlength="39" autocomplete="username"
    autocapitalize="none" spellcheck="false" value="${handle}"${error ? html` aria-invalid="true" aria-describedby="handle-error" autofocus` : html``}>
  <label class="check"><input type="checkbox" name="create" value="1" checked> Create this user if it does not exist</label>
  <div class="actions"><button type="submit" class="primary">Create and sign in</button></div>
</form>`;
}

/**
 * Whether a form post came from one of our pages, as far as the browser says. The form's page may have been
 * opened under another name of this server than BASE_URL's (127.0.0.1 for localhost): its origin is then
 * the one the request itself names, which another site cannot match.
 */
function fromThisSite(headers: IncomingHttpHeaders, ownOrigin: string): boolean {
  const site = headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' || site === 'none';
  const origin = headers.origin;
  return (
    origin === undefined || origin === 'null' || origin === ownOrigin || origin === `http://${headers.host}`
  );
}

export function devLoginRoute(
  ctx: ServiceContext,
  sessions: Sessions,
  safeNext: (value: unknown) => string,
  renderError: (next: string, error: string, handle: string) => string,
): Router {
  const router = Router();
  const ownOrigin = new URL(ctx.config.baseUrl).origin;
  router.post(
    DEV_LOGIN_PATH,
    express.urlencoded({ extended: false, limit: '4kb', verify: requireUtf8Form }),
    async (req, res) => {
      const next = safeNext(req.body?.next);
      // Nobody is signed in yet, so there is no session to bind a CSRF token to; but a browser says where a
      // form came from, and a page of another site must not sign a visitor in as a user of its choosing
      // (login CSRF). Sec-Fetch-Site first: our pages send no referrer, which makes a browser send
      // `Origin: null` even for our own form. Without it, an Origin that names another site is refused.
      // Clients that send neither (scripts, tests) are not browsers and carry no cookie of the visitor's.
      if (!fromThisSite(req.headers, ownOrigin)) {
        res
          .status(403)
          .type('html')
          .send(renderError(next, 'Sign in from this site’s own sign-in page.', ''));
        return;
      }
      const handle = String(req.body?.handle ?? '').trim();
      const outcome = await devSignInUser(ctx, handle, req.body?.create === '1');
      if ('error' in outcome) {
        // What was typed comes back, to be corrected rather than typed again.
        res
          .status(400)
          .type('html')
          .send(renderError(next, outcome.error, handle));
        return;
      }
      await sessions.start(req, res, outcome.userId);
      res.redirect(303, next);
    },
  );
  return router;
}
