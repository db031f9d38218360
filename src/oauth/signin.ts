// Signing in to the settings pages: GET /signin starts an authorization-code + PKCE flow of our first-party
// client (WEB_CLIENT), the person goes through the normal sign-in (consent is approved automatically for
// this client, see interactions.ts), and GET /settings/callback redeems the code and returns to `next`.
// POST /settings/signout ends the browser session.
import { createHash, randomBytes } from 'node:crypto';
import express, { type Request, type Response, Router } from 'express';
import type Provider from 'oidc-provider';
import type { ServiceContext } from '../app.ts';
import { revokeConnectedApp } from './connected-apps.ts';
import type { Csrf } from './csrf.ts';
import { errorPage, signInAgainPage } from './pages.ts';
import { OAUTH_ROUTES, WEB_CLIENT } from './provider.ts';
import { resourceFor } from './resources.ts';
import { endSession, SIGNOUT_CSRF_PURPOSE, signedIn } from './session.ts';

const COOKIE = 'l10n_signin';
const COOKIE_PURPOSE = 'signin-cookie';
/** The sign-in in progress may take this long; the authorization code itself lives 60 s. */
const COOKIE_TTL_SECONDS = 10 * 60;
export const DEFAULT_NEXT = '/settings/apps';

interface PendingSignIn {
  state: string;
  verifier: string;
  next: string;
  /** Unix seconds after which the cookie is refused even if the browser still sends it. */
  exp: number;
}

/** `next` is followed only when it is a path of ours under /settings/ (no scheme, host, `//` or `\`). */
export function safeNext(value: unknown, baseUrl: string): string {
  if (typeof value !== 'string' || !value.startsWith('/settings/') || /[\\\s]/.test(value))
    return DEFAULT_NEXT;
  const url = URL.parse(value, baseUrl);
  if (!url || url.origin !== new URL(baseUrl).origin || !url.pathname.startsWith('/settings/'))
    return DEFAULT_NEXT;
  return `${url.pathname}${url.search}`;
}

function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function signInRoutes(ctx: ServiceContext, provider: Provider, csrf: Csrf): Router {
  const router = Router();
  const { baseUrl } = ctx.config;
  const redirectUri = `${baseUrl}${WEB_CLIENT.callbackPath}`;
  const secure = baseUrl.startsWith('https:');
  const cookieOptions = { path: WEB_CLIENT.callbackPath, httpOnly: true, sameSite: 'lax', secure } as const;

  // The pending sign-in travels in a cookie signed with the cookie keys (an HMAC over its JSON), so no
  // server state is needed between /signin and the callback, and another site cannot plant one.
  function seal(pending: PendingSignIn): string {
    const body = Buffer.from(JSON.stringify(pending)).toString('base64url');
    return `${body}.${csrf.token(COOKIE_PURPOSE, body)}`;
  }
  function unseal(value: string | undefined): PendingSignIn | undefined {
    const [body, mac] = (value ?? '').split('.');
    if (!body || !csrf.verify(COOKIE_PURPOSE, body, mac)) return undefined;
    try {
      const pending = JSON.parse(Buffer.from(body, 'base64url').toString()) as PendingSignIn;
      return pending.exp > Date.now() / 1000 ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  function expired(res: Response, next: string) {
    res
      .status(400)
      .type('html')
      .send(
        signInAgainPage(
          `/signin?next=${encodeURIComponent(next)}`,
          'This sign-in has expired or was not started here.',
        ),
      );
  }

  router.get('/signin', async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const next = safeNext(req.query.next, baseUrl);
    if (await signedIn(provider, req, res)) {
      res.redirect(303, next);
      return;
    }
    const pending: PendingSignIn = {
      state: randomBytes(24).toString('base64url'),
      verifier: randomBytes(32).toString('base64url'),
      next,
      exp: Math.floor(Date.now() / 1000) + COOKIE_TTL_SECONDS,
    };
    res.cookie(COOKIE, seal(pending), { ...cookieOptions, maxAge: COOKIE_TTL_SECONDS * 1000 });
    const url = new URL(OAUTH_ROUTES.authorization, baseUrl);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: WEB_CLIENT.id,
      redirect_uri: redirectUri,
      scope: WEB_CLIENT.scopes.join(' '),
      resource: resourceFor('rest', baseUrl),
      state: pending.state,
      code_challenge: createHash('sha256').update(pending.verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    res.redirect(303, url.toString());
  });

  router.get(WEB_CLIENT.callbackPath, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    const pending = unseal(readCookie(req, COOKIE));
    res.clearCookie(COOKIE, cookieOptions);
    if (!pending || req.query.state !== pending.state) return expired(res, pending?.next ?? DEFAULT_NEXT);
    if (typeof req.query.error === 'string') {
      res
        .status(400)
        .type('html')
        .send(signInAgainPage(`/signin?next=${encodeURIComponent(pending.next)}`, 'You were not signed in.'));
      return;
    }
    const userId = await redeemCode(String(req.query.code ?? ''), pending.verifier);
    const who = await signedIn(provider, req, res);
    if (!userId || who?.userId !== userId) return expired(res, pending.next);
    // The first-party client needs no lasting grant: the pages use the browser session. Deleting it (and
    // anything issued under it) keeps it out of Connected apps and leaves no token behind.
    await revokeConnectedApp(ctx.orm, userId, WEB_CLIENT.id);
    res.redirect(303, pending.next);
  });

  /**
   * Redeems the code in-process, with the checks the token endpoint makes (client, redirect URI, expiry,
   * single use, PKCE S256), without minting an access token that would only be revoked again, and without
   * an HTTP call to our own public URL (which would share one token-endpoint rate-limit budget per instance).
   * Returns the signed-in user the code was issued for.
   */
  async function redeemCode(value: string, verifier: string): Promise<string | undefined> {
    if (!value) return undefined;
    const code = await provider.AuthorizationCode.find(value).catch(() => undefined);
    if (!code?.isValid) return undefined; // unknown, expired or already used
    if (code.clientId !== WEB_CLIENT.id || code.redirectUri !== redirectUri) return undefined;
    if (code.codeChallengeMethod !== 'S256') return undefined;
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    if (challenge !== code.codeChallenge) return undefined;
    await code.consume();
    return code.accountId;
  }

  router.post(
    '/settings/signout',
    express.urlencoded({ extended: false, limit: '4kb' }),
    async (req, res) => {
      const who = await signedIn(provider, req, res);
      if (who && !csrf.verify(SIGNOUT_CSRF_PURPOSE, who.sessionId, req.body?.csrf)) {
        res
          .status(403)
          .type('html')
          .send(errorPage('access_denied', 'The form has expired. Reload the page and retry.'));
        return;
      }
      if (who) await endSession(provider, req, res);
      res.redirect(303, DEFAULT_NEXT);
    },
  );

  return router;
}
