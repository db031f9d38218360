// The person's settings: account tokens of their personal account (created with the secret shown once,
// revoked) and the OAuth apps they connected. Both go through the operation pipeline like the API, so
// the token ceiling, limits and audit are the pipeline's; this file only turns forms into operations.
import type { Response, Router } from 'express';
import type { Pipeline } from '../../api/pipeline.ts';
import type { Role } from '../../authz/policy.ts';
import { ALL_SCOPES } from '../../authz/scopes.ts';
import { scopesBeyondCeiling } from '../../authz/token-ceiling.ts';
import type { ServiceContext } from '../../context.ts';
import { TOKEN_LIMITS } from '../../domain/tokens.ts';
import { personalAccount } from '../../domain/users.ts';
import { groupScopeEntries } from '../authorization-pages.ts';
import { sessionCaller } from '../door.ts';
import { foreignName } from '../foreign-name.ts';
import { allItems, formErrors, isOk, type Kit, list, type PageContext, text } from '../kit.ts';
import { shownOnce } from '../shown-once.ts';

const TOKENS = '/settings/tokens';
/** Where a new token's secret is shown, once: the create form redirects there (post, redirect, get). */
const CREATED = `${TOKENS}/created`;
const APPS = '/settings/apps';

/** What the page of a new token shows (createToken's answer, less what the page does not). */
type CreatedToken = {
  token: string;
  name: string;
  scopes: string[];
  expiresAt: string | null;
  tokenPrefix: string;
};

export function settingsPages(router: Router, kit: Kit, pipeline: Pipeline, ctx: ServiceContext): void {
  // The new secret goes from the create form to the page that shows it once (shown-once.ts).
  const created = shownOnce<CreatedToken>(
    ctx.config.cookieKeys,
    'token-created',
    ctx.config.baseUrl.startsWith('https:'),
  );

  /**
   * The scopes a personal token of this person may carry, by the same ceiling the createToken operation
   * applies (offered here so the form shows only what would be accepted).
   */
  async function grantable(pc: PageContext) {
    const em = ctx.orm.em.fork();
    const account = await personalAccount(em, pc.who.userId);
    const target = { account, roles: new Set<Role>(['self']) };
    const beyond = new Set(
      await scopesBeyondCeiling(em, pipeline.policy, sessionCaller(pc.who), target, ALL_SCOPES),
    );
    return ALL_SCOPES.filter((s) => !beyond.has(s));
  }

  interface TokenForm {
    values: { name: string; scopes: string[]; expiresInDays: string };
    fields: Record<string, string>;
    form: string[];
  }

  async function tokensPage(res: Response, pc: PageContext, status = 200, form?: TokenForm, notice?: string) {
    // Every token, newest first: the API lists the oldest first (revoked and expired ones included), so
    // one page of it would leave out the newest tokens, the ones most likely still active.
    const all = await allItems(pc.call, 'listTokens', { params: { account: pc.userHandle } });
    if ('failed' in all) return kit.problemPage(res, pc, all.failed);
    kit.render(
      res,
      pc,
      'tokens',
      {
        title: 'Account tokens',
        section: 'tokens',
        notice,
        tokens: all.items.toReversed(),
        groups: groupScopeEntries(await grantable(pc)),
        limits: TOKEN_LIMITS,
        token: form ?? {
          values: { name: '', scopes: [], expiresInDays: String(TOKEN_LIMITS.defaultLifetimeDays) },
          fields: {},
          form: [],
        },
      },
      status,
    );
  }

  router.get(
    TOKENS,
    kit.page(async (req, res, pc) => tokensPage(res, pc, 200, undefined, kit.noticeOf(req, pc))),
  );

  router.post(
    TOKENS,
    ...kit.action(async (req, res, pc) => {
      const values = {
        name: text(req.body, 'name'),
        scopes: list(req.body, 'scopes'),
        expiresInDays: text(req.body, 'expiresInDays'),
      };
      const days = values.expiresInDays.trim();
      const r = await pc.call('createToken', {
        params: { account: pc.userHandle },
        body: {
          name: values.name.trim(),
          scopes: values.scopes,
          // A number when it reads as one; otherwise as typed, so the operation's validation names it.
          ...(days === '' ? {} : { expiresInDays: /^-?\d+$/.test(days) ? Number(days) : days }),
        },
      });
      if (!isOk(r)) {
        if (r.status !== 400 && r.status !== 403) return kit.problemPage(res, pc, r);
        return tokensPage(res, pc, r.status, { values, ...formErrors(r) });
      }
      const { token, name, scopes, expiresAt, tokenPrefix } = r.body as CreatedToken;
      await created.showAt(res, CREATED, { token, name, scopes, expiresAt, tokenPrefix });
    }),
  );

  router.get(
    CREATED,
    kit.page(async (req, res, pc) => {
      const token = await created.take(req, res);
      if (!token) {
        const notice =
          "A token's secret is shown once, right after the token is created, and this one was shown already. If it was not copied, revoke the token and create another.";
        return res.redirect(303, kit.withNotice(pc, TOKENS, notice));
      }
      kit.render(res, pc, 'token-created', { title: 'Token created', section: 'tokens', token });
    }),
  );

  router.post(
    `${TOKENS}/:id/revoke`,
    ...kit.action(async (req, res, pc) => {
      const r = await pc.call('revokeToken', {
        params: { account: pc.userHandle, token: String(req.params.id) },
      });
      if (!isOk(r)) return kit.problemPage(res, pc, r);
      res.redirect(303, kit.withNotice(pc, TOKENS, 'Token revoked: it no longer works.'));
    }),
  );

  router.get(
    APPS,
    kit.page(async (req, res, pc) => {
      const r = await pc.call('listConnectedApps');
      if (!isOk(r)) return kit.problemPage(res, pc, r);
      kit.render(res, pc, 'apps', {
        title: 'Connected apps',
        section: 'apps',
        notice: kit.noticeOf(req, pc),
        apps: (r.body as { items: { clientName: string | null; scopes: string[] }[] }).items.map((app) => ({
          ...app,
          clientName: app.clientName === null ? null : foreignName(app.clientName),
          groups: groupScopeEntries(app.scopes),
        })),
      });
    }),
  );

  router.post(
    `${APPS}/:clientId/revoke`,
    ...kit.action(async (req, res, pc) => {
      const r = await pc.call('disconnectApp', { params: { clientId: String(req.params.clientId) } });
      if (!isOk(r) && r.status !== 404) return kit.problemPage(res, pc, r);
      const notice = 'App disconnected: its tokens no longer work, and it must ask again to connect.';
      res.redirect(303, kit.withNotice(pc, APPS, notice));
    }),
  );
}
