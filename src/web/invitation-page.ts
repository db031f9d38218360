// /invitations/answer?token=…: the invitation link in a browser. The person signs in (any provider), sees
// the organization and the role, and accepts or declines. The answer runs the same operations as the API
// (acceptInvitation / declineInvitation) through the pipeline, as the signed-in person: the same checks,
// among them that one of their sign-in methods verified the invited e-mail.
import express, { type Request, type Response, Router } from 'express';
import type { Pipeline } from '../api/pipeline.ts';
import type { ServiceContext } from '../app.ts';
import { hashToken } from '../authz/account-tokens.ts';
import { ALL_SCOPES } from '../authz/scopes.ts';
import { Invitation, Organization } from '../db/entities/index.ts';
import { effectiveStatus } from '../domain/invitations.ts';
import type { Sessions, SignedIn } from '../identity/sessions.ts';
import type { Csrf } from '../oauth/csrf.ts';
import { html, page } from '../oauth/html.ts';
import { errorPage } from '../oauth/pages.ts';

export const INVITATION_PATH = '/invitations/answer';
const CSRF_PURPOSE = 'invitation';

export function invitationPageRoutes(
  ctx: ServiceContext,
  pipeline: Pipeline,
  sessions: Sessions,
  csrf: Csrf,
): Router {
  const router = Router();

  router.get(INVITATION_PATH, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    const who = await sessions.require(req, res, `${INVITATION_PATH}?token=${encodeURIComponent(token)}`);
    if (!who) return;
    const em = ctx.orm.em.fork();
    const invitation =
      token.length > 0 && token.length <= 200
        ? await em.findOne(Invitation, { tokenHash: hashToken(token) })
        : null;
    if (!invitation) {
      res.status(404).type('html').send(errorPage('not_found', 'No invitation matches this link.'));
      return;
    }
    const organization = await em.findOneOrFail(Organization, invitation.organization.id, {
      populate: ['account'],
    });
    const status = effectiveStatus(invitation);
    const name = organization.account.displayName;
    res.type('html').send(
      page(
        `Invitation to ${name}`,
        html`<h1>Join ${name}?</h1>
<div class="card"><dl class="facts"><dt>Organization</dt><dd>${name} (@${organization.account.handle})</dd>
<dt>Role</dt><dd>${invitation.role}</dd><dt>Invited e-mail</dt><dd>${invitation.email}</dd></dl></div>
${
  status === 'pending'
    ? html`<form method="post" action="${INVITATION_PATH}">
  <input type="hidden" name="csrf" value="${csrf.token(CSRF_PURPOSE, who.sessionId)}">
  <input type="hidden" name="token" value="${token}">
  <div class="actions">
    <button type="submit" name="decision" value="accept" class="primary">Accept</button>
    <button type="submit" name="decision" value="decline">Decline</button>
  </div>
</form>`
    : html`<div class="card error" role="alert">This invitation is ${status}.</div>`
}`,
      ),
    );
  });

  router.post(INVITATION_PATH, express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const who = await sessions.current(req);
    if (!who || !csrf.verify(CSRF_PURPOSE, who.sessionId, req.body?.csrf)) {
      res
        .status(403)
        .type('html')
        .send(errorPage('access_denied', 'Sign in again and retry from the invitation link.'));
      return;
    }
    const accept = req.body.decision === 'accept';
    const response = await run(pipeline, req, who, accept ? 'acceptInvitation' : 'declineInvitation', {
      token: String(req.body.token ?? ''),
    });
    if (response.status >= 400) return problemPage(res, response);
    const joined = response.body as { handle: string; displayName: string; role: string } | undefined;
    res
      .type('html')
      .send(
        page(
          accept ? 'Invitation accepted' : 'Invitation declined',
          accept && joined
            ? html`<h1>You joined ${joined.displayName}</h1><p role="status">You are now ${joined.role === 'admin' ? 'an admin' : 'a member'} of @${joined.handle}.</p>`
            : html`<h1>Invitation declined</h1><p role="status">You did not join. The link no longer works.</p>`,
        ),
      );
  });

  return router;
}

/** Runs an operation as the signed-in person: a browser session holds every scope; roles still decide. */
function run(pipeline: Pipeline, req: Request, who: SignedIn, operationId: string, body: unknown) {
  return pipeline.execute({
    operationId,
    params: {},
    query: {},
    body,
    headers: {},
    bearer: undefined,
    caller: {
      userId: who.userId,
      scopes: new Set(ALL_SCOPES),
      credential: { kind: 'session', sessionId: who.sessionId },
    },
    door: 'web',
    meta: {
      ip: req.ip,
      userAgent: req.get('user-agent'),
      requestId: req.id === undefined ? undefined : String(req.id),
    },
  });
}

function problemPage(res: Response, response: { status: number; body?: unknown }) {
  const problem = response.body as { title?: string; detail?: string } | undefined;
  res
    .status(response.status)
    .type('html')
    .send(errorPage(problem?.title ?? 'Refused', problem?.detail ?? 'The invitation could not be answered.'));
}
