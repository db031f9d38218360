// Development sign-in (DEV_LOGIN, refused in production by the configuration): pick a local user by
// handle or create one, no provider involved. Used by /signin and by the OAuth sign-in step.
import express, { Router } from 'express';
import type { ServiceContext } from '../../context.ts';
import { createDevUser, findDevUser } from '../../identity/dev-users.ts';
import type { Sessions } from '../../identity/sessions.ts';
import { html } from '../html.ts';

const DEV_LOGIN_PATH = '/signin/dev';

/** The form on /signin: a handle, signed in (or created and signed in) at once. */
export function devLoginForm(next: string, error?: string) {
  return html`<h2>Development sign-in</h2>
<p class="muted">Choose a local user or create one. This does not exist in production.</p>
${error ? html`<div class="card error" role="alert" id="handle-error">${error}</div>` : html``}
<form method="post" action="${DEV_LOGIN_PATH}">
  <input type="hidden" name="next" value="${next}">
  <label for="new-handle">Handle</label>
  <input type="text" id="new-handle" name="handle" required minlength="2" maxlength="39" autocomplete="username"
    autocapitalize="none" spellcheck="false">
  <label class="check"><input type="checkbox" name="create" value="1" checked> Create this user if it does not exist</label>
  <div class="actions"><button type="submit" class="primary">Create and sign in</button></div>
</form>`;
}

export function devLoginRoute(
  ctx: ServiceContext,
  sessions: Sessions,
  safeNext: (value: unknown) => string,
  renderError: (next: string, error: string) => string,
): Router {
  const router = Router();
  router.post(DEV_LOGIN_PATH, express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const next = safeNext(req.body?.next);
    const handle = String(req.body?.handle ?? '').trim();
    let outcome = await findDevUser(ctx, handle);
    if ('error' in outcome && req.body?.create === '1') outcome = await createDevUser(ctx, handle);
    if ('error' in outcome) {
      res.status(400).type('html').send(renderError(next, outcome.error));
      return;
    }
    await sessions.start(req, res, outcome.userId);
    res.redirect(303, next);
  });
  return router;
}
