// /settings/apps: the signed-in user's connected apps, with a Disconnect button per app. "Signed in"
// means the authorization server's own session cookie (src/oauth/session.ts).
import express, { Router } from 'express';
import type { ServiceContext } from '../app.ts';
import { Account } from '../db/entities/index.ts';
import { SIGNOUT_CSRF_PURPOSE } from '../identity/routes.ts';
import type { Sessions } from '../identity/sessions.ts';
import { textProblem } from '../lib/text-input.ts';
import { listConnectedApps, revokeConnectedApp } from './connected-apps.ts';
import type { Csrf } from './csrf.ts';
import { appsPage, errorPage } from './pages.ts';

const CSRF_PURPOSE = 'connected-apps';

export function appsPageRoutes(ctx: ServiceContext, sessions: Sessions, csrf: Csrf): Router {
  const router = Router();

  router.get('/settings/apps', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const who = await sessions.current(req);
    if (!who) {
      res
        .status(401)
        .type('html')
        .send(appsPage({ userHandle: null, csrf: '', apps: [] }));
      return;
    }
    const account = await ctx.orm.em.fork().findOne(Account, { user: { id: who.userId }, kind: 'user' });
    res.type('html').send(
      appsPage({
        userHandle: account?.handle ?? who.userId,
        csrf: csrf.token(CSRF_PURPOSE, who.sessionId),
        signoutCsrf: csrf.token(SIGNOUT_CSRF_PURPOSE, who.sessionId),
        apps: await listConnectedApps(ctx.orm, who.userId),
      }),
    );
  });

  router.post(
    '/settings/apps/:clientId/revoke',
    express.urlencoded({ extended: false, limit: '4kb' }),
    async (req, res) => {
      const who = await sessions.current(req);
      if (!who || !csrf.verify(CSRF_PURPOSE, who.sessionId, req.body?.csrf)) {
        res
          .status(403)
          .type('html')
          .send(errorPage('access_denied', 'Sign in again and retry from the page.'));
        return;
      }
      const clientId = String(req.params.clientId);
      // An id with a character no client id has (a NUL the database would refuse) names no app.
      const revoked = textProblem(clientId) ? false : await revokeConnectedApp(ctx.orm, who.userId, clientId);
      ctx.logger.info({ userId: who.userId, clientId, revoked }, 'connected app disconnected');
      res.redirect(303, '/settings/apps');
    },
  );

  return router;
}
