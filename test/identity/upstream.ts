// Identity providers the sign-in tests run on loopback: a real oidc-provider instance as an upstream OpenID
// provider (Google, a generic provider, an organization's provider) with its development login form, and a
// small stand-in for GitHub with GitHub's four endpoints (authorize, access_token, /user, /user/emails).
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { type CookieJar, postForm } from '../oauth/helpers.ts';
import { freePort } from '../support/ports.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { lateBound } from '../support/suite.ts';

interface UpstreamClaims {
  email?: string;
  email_verified?: boolean;
  preferred_username?: string;
  name?: string;
}

export interface OidcUpstream {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Claims per login name; whatever login the form is given becomes the subject. */
  accounts: Map<string, UpstreamClaims>;
  /** How many HTTP requests it has answered (browsers' and the service's alike). */
  readonly requests: number;
  close(): Promise<void>;
}

async function listen(
  app: (req: never, res: never) => void,
  host = '127.0.0.1',
): Promise<{ server: Server; url: string }> {
  const { createServer } = await import('node:http');
  const server = createServer(app as never);
  server.listen(0, host);
  await once(server, 'listening');
  return { server, url: `http://${host}:${(server.address() as AddressInfo).port}` };
}

/**
 * A second authorization server: ID tokens carry sub, email, email_verified, preferred_username, name. It
 * listens on loopback, or on `host` (an IPv4 address of this machine).
 */
export async function startOidcUpstream(
  redirectUris: string[],
  options: { host?: string } = {},
): Promise<OidcUpstream> {
  const accounts = new Map<string, UpstreamClaims>();
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  let provider: Provider | undefined;
  let requests = 0;
  const { server, url } = await listen(
    ((req: never, res: never) => {
      requests++;
      return provider!.callback()(req, res);
    }) as never,
    options.host,
  );
  provider = new Provider(url, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    cookies: { keys: [randomBytes(32).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['preferred_username', 'name'] },
    // The claims go into the ID token itself, as Google puts them.
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    findAccount: (_ctx, sub) => {
      const claims = accounts.get(sub);
      return claims ? { accountId: sub, claims: () => ({ sub, ...claims }) } : undefined;
    },
  });
  return {
    issuer: url,
    clientId,
    clientSecret,
    accounts,
    get requests() {
      return requests;
    },
    async close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Follows the upstream's development login and consent over HTTP (for tests without a browser) from an
 * authorization URL to the redirect back to us; returns that callback URL.
 */
export async function upstreamLogin(
  jar: CookieJar,
  authorizationUrl: string,
  login: string,
): Promise<string> {
  let url = authorizationUrl;
  const upstreamOrigin = new URL(authorizationUrl).origin;
  for (let step = 0; step < 10; step++) {
    if (!url.startsWith(upstreamOrigin)) return url;
    const response = await jar.fetch(url);
    if (response.status >= 300 && response.status < 400) {
      url = new URL(response.headers.get('location')!, url).toString();
      continue;
    }
    const html = await response.text();
    const fields: Record<string, string> = html.includes('name="login"')
      ? { prompt: 'login', login, password: 'any' }
      : { prompt: 'consent' };
    const action = /action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form at ${url}: ${html.slice(0, 300)}`);
    const next = await postForm(jar, new URL(action.replace(/&amp;/g, '&'), url).toString(), fields);
    url = new URL(next.headers.get('location')!, url).toString();
  }
  throw new Error('upstream login did not finish');
}

/** The same upstream login and consent, in a real browser's `page` that is at the upstream's login form. */
export async function upstreamLoginInPage(page: Page, login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

interface GithubUser {
  id: number;
  login: string;
  name?: string;
  emails: { email: string; primary: boolean; verified: boolean }[];
}

export interface GithubStandIn {
  url: string;
  clientId: string;
  clientSecret: string;
  /** Who "signs in" at the next authorization. */
  user: GithubUser;
  /** When set, GET /user answers 200 with this body instead of the user (a proxy's page, a broken answer). */
  userAnswer?: string;
  close(): Promise<void>;
}

/** GitHub's OAuth app endpoints and REST calls, as GitHub answers them; approves at once as `user`. */
async function startGithubStandIn(): Promise<GithubStandIn> {
  const codes = new Map<string, { user: GithubUser; challenge: string; redirectUri: string }>();
  const tokens = new Map<string, GithubUser>();
  const standIn: GithubStandIn = {
    url: '',
    clientId: `Iv1.${randomBytes(8).toString('hex')}`,
    clientSecret: randomBytes(20).toString('hex'),
    user: { id: 1, login: 'octo', emails: [] },
    async close() {},
  };
  const app = express();
  app.get('/login/oauth/authorize', (req, res) => {
    const q = req.query as Record<string, string>;
    if (q.client_id !== standIn.clientId || q.code_challenge_method !== 'S256') {
      res.status(400).send('bad request');
      return;
    }
    const code = randomBytes(10).toString('hex');
    codes.set(code, { user: standIn.user, challenge: q.code_challenge!, redirectUri: q.redirect_uri! });
    const back = new URL(q.redirect_uri!);
    back.searchParams.set('code', code);
    back.searchParams.set('state', q.state!);
    res.redirect(302, back.toString());
  });
  app.post('/login/oauth/access_token', express.urlencoded({ extended: false }), (req, res) => {
    const body = req.body as Record<string, string>;
    const issued = codes.get(body.code ?? '');
    codes.delete(body.code ?? '');
    const verifierOk =
      issued &&
      createHash('sha256')
        .update(body.code_verifier ?? '')
        .digest('base64url') === issued.challenge;
    // GitHub answers errors with 200 and an error field.
    if (
      body.client_id !== standIn.clientId ||
      body.client_secret !== standIn.clientSecret ||
      !issued ||
      !verifierOk ||
      body.redirect_uri !== issued.redirectUri
    ) {
      res.json({
        error: 'bad_verification_code',
        error_description: 'The code passed is incorrect or expired.',
      });
      return;
    }
    const token = `gho_${randomBytes(16).toString('hex')}`;
    tokens.set(token, issued.user);
    res.json({ access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
  });
  const who = (req: express.Request) => tokens.get((req.get('authorization') ?? '').replace(/^Bearer /i, ''));
  app.get('/user', (req, res) => {
    const user = who(req);
    if (!user) return void res.status(401).json({ message: 'Bad credentials' });
    if (standIn.userAnswer !== undefined) return void res.type('json').send(standIn.userAnswer);
    res.json({ id: user.id, login: user.login, name: user.name ?? null });
  });
  app.get('/user/emails', (req, res) => {
    const user = who(req);
    if (!user) return void res.status(401).json({ message: 'Bad credentials' });
    res.json(user.emails.map((e) => ({ ...e, visibility: e.primary ? 'private' : null })));
  });
  const { server, url } = await listen(app as never);
  standIn.url = url;
  standIn.close = async () => {
    server.closeAllConnections();
    server.close();
  };
  return standIn;
}

/**
 * For the file: the service on a port known in advance, development sign-in off, with a GitHub stand-in
 * and an OpenID upstream that sends people back to our /signin/callback/<callback>: the start of every
 * suite about upstream sign-in. `asGoogle` configures that upstream as Google; `env` adds settings (read
 * when the file starts, after the beforeAll hooks registered before this call).
 */
export function useUpstreamSignIn(
  callback: string,
  options: { asGoogle?: boolean; env?: () => Record<string, string> } = {},
): { service: TestService; upstream: OidcUpstream; github: GithubStandIn } {
  const service = lateBound<TestService>('the test service');
  const upstream = lateBound<OidcUpstream>('the OpenID upstream');
  const github = lateBound<GithubStandIn>('the GitHub stand-in');
  const started: { close(): Promise<void> }[] = [];
  beforeAll(async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const oidc = await startOidcUpstream([`${base}/signin/callback/${callback}`]);
    started.push(oidc);
    const standIn = await startGithubStandIn();
    started.push(standIn);
    const running = await startTestService({
      PORT: String(port),
      BASE_URL: base,
      DEV_LOGIN: 'false',
      GITHUB_CLIENT_ID: standIn.clientId,
      GITHUB_CLIENT_SECRET: standIn.clientSecret,
      GITHUB_URL: standIn.url,
      GITHUB_API_URL: standIn.url,
      ...(options.asGoogle
        ? {
            GOOGLE_CLIENT_ID: oidc.clientId,
            GOOGLE_CLIENT_SECRET: oidc.clientSecret,
            GOOGLE_ISSUER: oidc.issuer,
          }
        : {}),
      ...options.env?.(),
    });
    started.unshift(running);
    service.bind(running);
    upstream.bind(oidc);
    github.bind(standIn);
  });
  afterAll(async () => {
    for (const each of started) await each.close();
  });
  return { service: service.handle, upstream: upstream.handle, github: github.handle };
}
