// Sign-in for people in the browser: /signin (the choices), /signin/<provider> (off to the provider),
// /signin/org (by work e-mail, to the provider of the organization that verified the domain),
// /signin/callback/<provider> (back, then a new browser session; with ?link=1 a signed-in person links
// that provider to themselves) and /settings/signout. The sign-in methods and sessions pages are web pages
// (src/web/pages/identities.ts, sessions.ts).
import express, { type Request, type Response, Router } from 'express';
import type { ServiceContext } from '../../context.ts';
import { OrganizationDomain, OrganizationSignInProvider } from '../../db/entities/index.ts';
import { domainOf, orgProviderKey, orgSecretBinding, signInWithProfile } from '../../identity/people.ts';
import {
  type Checks,
  configuredProviders,
  type Leg,
  newChecks,
  organizationLeg,
  type ProviderId,
  SignInError,
} from '../../identity/providers.ts';
import { readCookie, type Sessions } from '../../identity/sessions.ts';
import { finishSignInAttempt, startSignInAttempt } from '../../identity/sign-in-attempts.ts';
import { createCookieSealer } from '../../lib/sealed-cookie.ts';
import { requireUtf8Form } from '../../lib/utf8-body.ts';
import type { Csrf } from '../csrf.ts';
import { devLoginForm, devLoginRoute } from './dev-login.ts';
import { linkFailedPage, type OrgSignInError, signInFailedPage, signInPage, staleFormPage } from './pages.ts';

const PENDING_COOKIE = 'l10n_signin';
const PENDING_PURPOSE = 'signin-pending';
/** A sign-in at the provider may take this long. */
const PENDING_TTL_SECONDS = 10 * 60;
/** Where a sign-in with no page to return to lands: the dashboard, the start of everything a person does. */
export const DEFAULT_NEXT = '/dashboard';
export const SIGNOUT_CSRF_PURPOSE = 'signout';
/** An e-mail address whose domain is in its ASCII form (a punycode top-level domain such as xn--p1ai too). */
const EMAIL = /^[^@\s]{1,64}@[a-z0-9.-]{1,253}\.(?:[a-z]{2,}|xn--[a-z0-9-]+)$/i;

/** Where a sign-in may return to: our pages, an OAuth sign-in step, an invitation. */
const NEXT_PREFIXES = [
  '/settings/',
  '/oauth/interaction/',
  '/invitations/',
  '/dashboard',
  '/accounts/',
  '/orgs/',
];

/**
 * The longest return path kept: it travels in the pending sign-in's sealed cookie, and browsers drop a
 * cookie over 4096 bytes (the callback would then fail every time).
 */
const NEXT_MAX_LENGTH = 2000;

export function safeNext(value: unknown, baseUrl: string): string {
  if (typeof value !== 'string' || /[\\\s]/.test(value) || !NEXT_PREFIXES.some((p) => value.startsWith(p)))
    return DEFAULT_NEXT;
  const url = URL.parse(value, baseUrl);
  if (
    !url ||
    url.origin !== new URL(baseUrl).origin ||
    !NEXT_PREFIXES.some((p) => url.pathname.startsWith(p))
  )
    return DEFAULT_NEXT;
  const next = `${url.pathname}${url.search}`;
  return next.length <= NEXT_MAX_LENGTH ? next : DEFAULT_NEXT;
}

type Pending = {
  /** The sign_in_attempts row: deleted by the first callback, so the same state cannot be replayed. */
  id: string;
  provider: ProviderId;
  organizationId?: string;
  checks: Checks;
  next: string;
  /** Set when a signed-in person links another provider to themselves. */
  linkTo?: string;
};

export interface IdentityRoutesOptions {
  sessions: Sessions;
  csrf: Csrf;
  /** Ends the authorization server's own browser session too, at sign-out. */
  onSignOut(req: Request, res: Response): Promise<void>;
}

export function identityRoutes(ctx: ServiceContext, options: IdentityRoutesOptions): Router {
  const router = Router();
  const { sessions, csrf } = options;
  const { baseUrl } = ctx.config;
  const providers = configuredProviders(ctx.config);
  const form = express.urlencoded({ extended: false, limit: '4kb', verify: requireUtf8Form });
  const cookieOptions = {
    path: '/signin',
    httpOnly: true,
    sameSite: 'lax',
    secure: baseUrl.startsWith('https:'),
  } as const;
  const callbackUri = (provider: ProviderId) => `${baseUrl}/signin/callback/${provider}`;

  // The pending sign-in travels in a sealed cookie, so a callback is honoured only in the browser that
  // started it (and the browser cannot read its PKCE verifier); its attempt row makes it single-use.
  const pendingCookie = createCookieSealer<Pending>(ctx.config.cookieKeys, PENDING_PURPOSE);

  // A failed link leaves the person signed in: its page leads back to their sign-in methods, not to sign-in.
  const fail = (res: Response, status: number, message: string, next = DEFAULT_NEXT, linking = false) =>
    res
      .status(status)
      .type('html')
      .send(linking ? linkFailedPage(message) : signInFailedPage(message, next));

  /**
   * "Sign in with your organization" could not go on: the form again, with what was typed and why at its
   * field. From an app's sign-in step, that step's page (which names the app and can cancel), told by code.
   */
  function orgFormAgain(res: Response, status: number, next: string, email: string, error: OrgSignInError) {
    if (next.startsWith('/oauth/interaction/')) {
      const back = new URL(next, baseUrl);
      back.searchParams.set('org_error', error);
      back.searchParams.set('email', email);
      return res.redirect(303, `${back.pathname}${back.search}`);
    }
    res
      .status(status)
      .type('html')
      .send(
        signInPage(providers, next, {
          devForm: ctx.config.devLogin ? devLoginForm(next) : undefined,
          org: { email, error },
        }),
      );
  }

  async function orgLeg(organizationId: string): Promise<Leg | undefined> {
    const row = await ctx.orm.em
      .fork()
      .findOne(OrganizationSignInProvider, { organization: organizationId, enabled: true });
    if (!row?.clientSecretEncrypted) return undefined;
    const clientSecret = ctx.cipher.decrypt(
      Buffer.from(row.clientSecretEncrypted),
      orgSecretBinding(organizationId),
    );
    return organizationLeg(
      { issuer: row.issuer, clientId: row.clientId, clientSecret },
      orgProviderKey(organizationId),
      ctx.config,
    );
  }

  async function begin(
    req: Request,
    res: Response,
    provider: ProviderId,
    leg: Leg,
    extra: { organizationId?: string; linkTo?: string },
  ) {
    const next = safeNext(req.query.next, baseUrl);
    const attemptId = await startSignInAttempt(ctx.orm, PENDING_TTL_SECONDS);
    const checks = newChecks();
    let url: URL;
    try {
      url = await leg.authorizationUrl(checks, callbackUri(provider));
    } catch (error) {
      if (error instanceof SignInError) return fail(res, 502, error.message, next, Boolean(extra.linkTo));
      throw error;
    }
    const pending: Pending = {
      id: attemptId,
      provider,
      checks,
      next,
      ...extra,
    };
    res.cookie(PENDING_COOKIE, await pendingCookie.seal(pending, PENDING_TTL_SECONDS), {
      ...cookieOptions,
      maxAge: PENDING_TTL_SECONDS * 1000,
    });
    res.redirect(303, url.toString());
  }

  router.get('/signin', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const next = safeNext(req.query.next, baseUrl);
    if (await sessions.current(req)) return res.redirect(303, next);
    res.type('html').send(
      signInPage(providers, next, {
        devForm: ctx.config.devLogin ? devLoginForm(next) : undefined,
        signedOut: req.query.signed_out === '1',
      }),
    );
  });
  if (ctx.config.devLogin)
    router.use(
      devLoginRoute(
        ctx,
        sessions,
        (value) => safeNext(value, baseUrl),
        (next, error, handle) =>
          signInPage(providers, next, { devForm: devLoginForm(next, error, handle), failed: true }),
      ),
    );

  router.get('/signin/org', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const next = safeNext(req.query.next, baseUrl);
    const typed = typeof req.query.email === 'string' ? req.query.email.trim().toLowerCase() : '';
    // The domain in its ASCII form, as domains are verified (a@bücher.example is a@xn--bcher-kva.example).
    const at = typed.lastIndexOf('@');
    const email = at > 0 ? `${typed.slice(0, at)}@${domainOf(typed)}` : typed;
    if (!EMAIL.test(email)) return orgFormAgain(res, 400, next, typed, 'invalid');
    const domain = await ctx.orm.em
      .fork()
      .findOne(OrganizationDomain, { domain: domainOf(email), verifiedAt: { $ne: null } });
    if (!domain) return orgFormAgain(res, 404, next, typed, 'unknown');
    // The domain is an organization's, but it has no provider (removed, or not set up yet): say so, rather
    // than that no organization has the domain, so the person knows to sign in another way or ask an admin.
    const leg = await orgLeg(domain.organization.id);
    if (!leg) return orgFormAgain(res, 404, next, typed, 'no_provider');
    await begin(req, res, 'org', leg, { organizationId: domain.organization.id });
  });

  router.get('/signin/:provider', async (req, res, next) => {
    const found = providers.find((p) => p.id === req.params.provider);
    if (!found) return next();
    res.set('Cache-Control', 'no-store');
    let linkTo: string | undefined;
    if (req.query.link === '1') {
      const who = await sessions.require(req, res, '/settings/identities');
      if (!who) return;
      linkTo = who.userId;
    }
    await begin(req, res, found.id, found.leg, { linkTo });
  });

  router.get('/signin/callback/:provider', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const pending = await pendingCookie.open(readCookie(req, PENDING_COOKIE));
    const next = pending?.next ?? DEFAULT_NEXT;
    const expired = 'This sign-in has expired or was not started in this browser. Start again.';
    // A callback of another sign-in (an older tab's, or one planted by another site) leaves the sign-in this
    // browser has in progress alone: only its own callback uses up the cookie.
    if (!pending || pending.provider !== req.params.provider || req.query.state !== pending.checks.state)
      return fail(res, 400, expired, next);
    res.clearCookie(PENDING_COOKIE, cookieOptions);
    const linking = Boolean(pending.linkTo);
    // Single use: the first callback deletes the attempt; a replay finds nothing.
    if (!(await finishSignInAttempt(ctx.orm, pending.id))) return fail(res, 400, expired, next, linking);

    const leg =
      pending.provider === 'org'
        ? await orgLeg(pending.organizationId ?? '')
        : providers.find((p) => p.id === pending.provider)?.leg;
    if (!leg) return fail(res, 400, 'This sign-in method is no longer available.', next, linking);

    let profile: Awaited<ReturnType<Leg['profile']>>;
    try {
      profile = await leg.profile(new URL(req.originalUrl, callbackUri(pending.provider)), pending.checks);
    } catch (error) {
      if (error instanceof SignInError) {
        ctx.logger.info(
          { provider: pending.provider, reason: error.message },
          'sign-in failed at the provider',
        );
        return fail(res, 400, error.message, next, linking);
      }
      throw error;
    }
    if (pending.linkTo) {
      const who = await sessions.current(req);
      if (who?.userId !== pending.linkTo) return fail(res, 400, expired, next, linking);
    }
    const outcome = await signInWithProfile(ctx.orm, profile, {
      linkTo: pending.linkTo,
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
    });
    if ('refused' in outcome) return fail(res, 403, outcome.refused, next, linking);
    if (!pending.linkTo) await sessions.start(req, res, outcome.userId);
    ctx.logger.info(
      {
        userId: outcome.userId,
        provider: profile.provider,
        created: outcome.created,
        linked: Boolean(pending.linkTo),
      },
      'signed in',
    );
    res.redirect(303, pending.next);
  });

  router.post('/settings/signout', form, async (req, res) => {
    const who = await sessions.current(req);
    if (who && !csrf.verify(SIGNOUT_CSRF_PURPOSE, who.sessionId, req.body?.csrf)) {
      res
        .status(403)
        .type('html')
        .send(
          staleFormPage({
            question: 'Sign out?',
            action: '/settings/signout',
            button: 'Sign out',
            csrf: csrf.token(SIGNOUT_CSRF_PURPOSE, who.sessionId),
            back: '/dashboard',
          }),
        );
      return;
    }
    await sessions.end(req, res);
    await options.onSignOut(req, res);
    res.redirect(303, '/signin?signed_out=1');
  });

  return router;
}
