// Where the person is signed in (/settings/sessions): their live browser sessions, and ending one of the
// others (this browser's is ended by signing out). Sessions are no operation of the API: they are what a
// browser signs in with, so this page reads and ends them through src/identity/sessions.ts, which records
// the end in the person's audit log as an operation would.
import type { Router } from 'express';
import type { Sessions } from '../../identity/sessions.ts';
import { UUID } from '../../lib/ids.ts';
import { requestMeta } from '../door.ts';
import type { Kit } from '../kit.ts';

const SESSIONS = '/settings/sessions';

export function sessionPages(router: Router, kit: Kit, sessions: Sessions): void {
  router.get(
    SESSIONS,
    kit.page(async (req, res, pc) => {
      kit.render(res, pc, 'sessions', {
        title: 'Sessions',
        section: 'profile',
        crumbs: [{ href: '/settings/profile', label: 'Profile' }, { label: 'Sessions' }],
        notice: kit.noticeOf(req, pc),
        sessions: await sessions.list(pc.who.userId, pc.who.sessionId),
      });
    }),
  );

  router.post(
    `${SESSIONS}/:id/end`,
    ...kit.action(async (req, res, pc) => {
      // Ids are compared and recorded as the database writes them (a uuid reads the same in capitals).
      const id = String(req.params.id).toLowerCase();
      // This browser's own session ends by signing out, which ends the authorization server's too.
      const own = id === pc.who.sessionId;
      const ended = !own && UUID.test(id) && (await sessions.endOne(pc.who.userId, id, requestMeta(req)));
      const notice = own
        ? "That is this browser's session: use Sign out to end it."
        : ended
          ? 'Session ended: that browser is signed out.'
          : 'That session had already ended, or is not one of yours.';
      res.redirect(303, kit.withNotice(pc, SESSIONS, notice));
    }),
  );
}
