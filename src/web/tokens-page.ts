// /settings/tokens: the signed-in person's account tokens on their personal account. Lists them, creates
// one (the secret is shown once, on the answer to the form) and revokes one. The same domain code as the
// REST API (issueAccountToken, the token ceiling, the serializer, the audit record); a browser session
// holds every scope, so the ceiling is the person's roles.
import express, { type Request, type Response, Router } from 'express';
import type { ServiceContext } from '../app.ts';
import { loadPolicy, type Policy, type Role } from '../authz/policy.ts';
import { ALL_SCOPES, isScope, type Scope } from '../authz/scopes.ts';
import { scopesBeyondCeiling, type TokenCreator } from '../authz/token-ceiling.ts';
import { Account, AccountToken, type IAccount } from '../db/entities/index.ts';
import { recordAudit } from '../domain/audit.ts';
import { issueAccountToken, serializeToken, TOKEN_LIMITS, tokenExpiry } from '../domain/tokens.ts';
import { SIGNOUT_CSRF_PURPOSE } from '../identity/routes.ts';
import type { Sessions, SignedIn } from '../identity/sessions.ts';
import { UUID } from '../lib/ids.ts';
import { textProblem } from '../lib/text-input.ts';
import type { Csrf } from '../oauth/csrf.ts';
import { errorPage, notSignedInPage } from '../oauth/pages.ts';
import { type TokenForm, tokenCreatedPage, tokensPage } from './tokens-view.ts';

const PATH = '/settings/tokens';
const CSRF_PURPOSE = 'account-tokens';
const LIST_LIMIT = 100;

export function tokensPageRoutes(ctx: ServiceContext, sessions: Sessions, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb' });
  // The same policy files the API loads; read once, on first use (mounting stays synchronous).
  let policy: Promise<Policy> | undefined;
  const getPolicy = () => {
    policy ??= loadPolicy(ctx.config.policyDir);
    return policy;
  };

  /** The person, their personal account, and the scopes a token of theirs may carry. */
  async function load(who: SignedIn) {
    const em = ctx.orm.em.fork();
    const account = await em.findOneOrFail(Account, { user: { id: who.userId }, kind: 'user' });
    const creator: TokenCreator = { userId: who.userId, scopes: new Set(ALL_SCOPES) };
    // A personal token on the person's own account: `self` there, plus their organization roles (the
    // ceiling adds those, as for the API).
    const target = { account, roles: new Set<Role>(['self']) };
    const beyond = new Set(await scopesBeyondCeiling(em, await getPolicy(), creator, target, ALL_SCOPES));
    return { em, account, creator, target, grantable: ALL_SCOPES.filter((s) => !beyond.has(s)) };
  }

  async function render(
    res: Response,
    who: SignedIn,
    loaded: Awaited<ReturnType<typeof load>>,
    extra: { status?: number; errors?: string[]; values?: TokenForm; notice?: string } = {},
  ) {
    const { em, account } = loaded;
    const rows = await em.find(
      AccountToken,
      { account: account.id },
      { orderBy: { createdAt: 'desc', id: 'desc' }, limit: LIST_LIMIT },
    );
    const now = new Date();
    res
      .status(extra.status ?? 200)
      .type('html')
      .send(
        tokensPage({
          userHandle: account.handle,
          csrf: csrf.token(CSRF_PURPOSE, who.sessionId),
          signoutCsrf: csrf.token(SIGNOUT_CSRF_PURPOSE, who.sessionId),
          tokens: rows.map((t) => serializeToken(t, account.handle, account.handle, now)),
          grantable: loaded.grantable,
          errors: extra.errors ?? [],
          values: extra.values ?? {
            name: '',
            scopes: [],
            expiresInDays: String(TOKEN_LIMITS.defaultLifetimeDays),
          },
          notice: extra.notice,
        }),
      );
  }

  /** The signed-in person for a POST whose CSRF token matches their session; answers 403 otherwise. */
  async function forPost(req: Request, res: Response): Promise<SignedIn | undefined> {
    const who = await sessions.current(req);
    if (who && csrf.verify(CSRF_PURPOSE, who.sessionId, req.body?.csrf)) return who;
    res.status(403).type('html').send(errorPage('access_denied', 'Sign in again and retry from the page.'));
    return undefined;
  }

  const meta = (req: Request) => ({
    ip: req.ip,
    userAgent: req.get('user-agent'),
    requestId: req.id === undefined ? undefined : String(req.id),
  });

  router.get(PATH, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const who = await sessions.current(req);
    if (!who) {
      res.status(401).type('html').send(notSignedInPage('Account tokens', PATH));
      return;
    }
    await render(res, who, await load(who));
  });

  router.post(PATH, form, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const who = await forPost(req, res);
    if (!who) return;
    const loaded = await load(who);
    const values = readForm(req.body);
    const parsed = validate(values);
    if ('errors' in parsed) return render(res, who, loaded, { status: 400, errors: parsed.errors, values });

    const { em, account, creator, target } = loaded;
    const beyond = await scopesBeyondCeiling(em, await getPolicy(), creator, target, parsed.scopes);
    if (beyond.length > 0) {
      const errors = [`A token cannot carry more than you hold; you do not hold ${beyond.join(', ')}.`];
      return render(res, who, loaded, { status: 403, errors, values });
    }
    const { row, secret } = issueAccountToken(em, {
      account,
      createdById: who.userId,
      name: parsed.name,
      scopes: parsed.scopes,
      expiresAt: tokenExpiry(parsed.days),
    });
    recordAudit(
      em,
      { userId: who.userId },
      {
        action: 'token.create',
        resourceType: 'account_token',
        resourceId: row.id,
        account,
        details: {
          name: row.name,
          scopes: row.scopes,
          tokenPrefix: row.tokenPrefix,
          expiresAt: row.expiresAt?.toISOString() ?? null,
        },
        door: 'web',
        meta: meta(req),
      },
    );
    await em.flush(); // token and audit event in one transaction
    ctx.logger.info({ userId: who.userId, tokenId: row.id }, 'account token created on the settings page');
    res
      .status(201)
      .type('html')
      .send(
        tokenCreatedPage({
          userHandle: account.handle,
          signoutCsrf: csrf.token(SIGNOUT_CSRF_PURPOSE, who.sessionId),
          token: serializeToken(row, account.handle, account.handle),
          secret,
        }),
      );
  });

  router.post(`${PATH}/:id/revoke`, form, async (req, res) => {
    const who = await forPost(req, res);
    if (!who) return;
    const { em, account } = await load(who);
    const id = String(req.params.id);
    const token = UUID.test(id) ? await em.findOne(AccountToken, { id, account: account.id }) : null;
    if (!token) {
      res.status(404).type('html').send(errorPage('not_found', 'No such token on your account.'));
      return;
    }
    // Idempotent, as in the API: the first revocation time stays the record.
    if (!token.revokedAt) {
      token.revokedAt = new Date();
      recordRevocation(em, who, account, token, meta(req));
      await em.flush();
    }
    res.redirect(303, PATH);
  });

  return router;
}

function recordRevocation(
  em: Parameters<typeof recordAudit>[0],
  who: SignedIn,
  account: IAccount,
  token: { id: string; name: string; tokenPrefix: string },
  meta: { ip?: string; userAgent?: string; requestId?: string },
) {
  recordAudit(
    em,
    { userId: who.userId },
    {
      action: 'token.revoke',
      resourceType: 'account_token',
      resourceId: token.id,
      account,
      details: { name: token.name, tokenPrefix: token.tokenPrefix },
      door: 'web',
      meta,
    },
  );
}

function readForm(body: Record<string, unknown> | undefined): TokenForm {
  const scopes = body?.scopes;
  return {
    name: typeof body?.name === 'string' ? body.name : '',
    scopes: (Array.isArray(scopes) ? scopes : scopes === undefined ? [] : [scopes]).map(String),
    expiresInDays: typeof body?.expiresInDays === 'string' ? body.expiresInDays : '',
  };
}

/** The limits of AccountTokenCreate in openapi.yaml, with messages for a person rather than a pointer. */
function validate(form: TokenForm): { name: string; scopes: Scope[]; days: number } | { errors: string[] } {
  const errors: string[] = [];
  const name = form.name.trim();
  if (name.length < 1 || name.length > TOKEN_LIMITS.nameMaxLength)
    errors.push(`Give the token a name of 1 to ${TOKEN_LIMITS.nameMaxLength} characters.`);
  // The API's rule on characters (a NUL cannot even be stored).
  const refused = textProblem(name);
  if (refused) errors.push(`The name ${refused}.`);
  const scopes = [...new Set(form.scopes)];
  if (scopes.length === 0) errors.push('Choose at least one scope.');
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) errors.push(`Unknown scopes: ${unknown.join(', ')}.`);
  const days =
    form.expiresInDays.trim() === '' ? TOKEN_LIMITS.defaultLifetimeDays : Number(form.expiresInDays);
  if (!Number.isInteger(days) || days < TOKEN_LIMITS.minLifetimeDays || days > TOKEN_LIMITS.maxLifetimeDays)
    errors.push(
      `Expiry is a whole number of days from ${TOKEN_LIMITS.minLifetimeDays} to ${TOKEN_LIMITS.maxLifetimeDays}.`,
    );
  return errors.length > 0 ? { errors } : { name, scopes: scopes as Scope[], days };
}
