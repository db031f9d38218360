// Test helpers for the OAuth suites: a cookie-jar browser stand-in that drives our sign-in and consent
// forms over real HTTP, plain registration/token calls, and an in-process verifier on the same database.
import { randomBytes } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { Browser, BrowserContext } from 'playwright-core';
import { expect } from 'vitest';
import { createContext } from '../../src/context.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createOAuthServer, type OAuthServer } from '../../src/oauth/index.ts';
import { startTestService, type TestService } from '../support/service.ts';

export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export function uniqueHandle(prefix = 'u'): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

/** Minimal cookie jar: name → value; honours deletion (Max-Age=0 or an expiry in the past). */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((s) => s.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const expired = attributes.some((a) => {
        const [k = '', v = ''] = a.split('=');
        if (k.toLowerCase() === 'max-age') return Number(v) <= 0;
        if (k.toLowerCase() === 'expires') return new Date(v).getTime() < Date.now();
        return false;
      });
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', this.header());
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    this.store(response);
    return response;
  }
}

/** The hidden CSRF value of the page's forms. */
export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error(`no CSRF token on page:\n${html.slice(0, 500)}`);
  return match[1]!;
}

export function postForm(jar: CookieJar, url: string, fields: Record<string, string>): Promise<Response> {
  return jar.fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

/**
 * The development sign-in at /signin/dev, outside any authorization (as a person signs in to the settings
 * pages), creating the user if need be; returns the Set-Cookie of the new browser session.
 */
export async function devSignIn(
  service: { url: string },
  jar: CookieJar,
  handle: string,
  next = '/settings/apps',
): Promise<string> {
  const response = await postForm(jar, `${service.url}/signin/dev`, { handle, create: '1', next });
  expect(response.status).toBe(303);
  return response.headers.getSetCookie().find((c) => c.startsWith('l10n_session='))!;
}

/** A new cookie jar signed in as `handle` (created if need be) through the development sign-in. */
export async function signedInJar(service: { url: string }, handle: string): Promise<CookieJar> {
  const jar = new CookieJar();
  await devSignIn(service, jar, handle, '/dashboard');
  return jar;
}

/** A chromium context signed in as an existing user (the development sign-in, its cookies handed over). */
export async function signedInBrowser(
  service: { url: string },
  browser: Browser,
  handle: string,
): Promise<BrowserContext> {
  const jar = await signedInJar(service, handle);
  const context = await browser.newContext();
  await context.addCookies([...jar.cookies].map(([name, value]) => ({ name, value, url: service.url })));
  return context;
}

export interface BrowserOptions {
  /** Signs in as this handle, creating the user if `create`. */
  handle: string;
  create?: boolean;
  decision?: 'approve' | 'deny';
}

/**
 * Follows an authorization request like a browser: redirects, the sign-in page, the consent page, until
 * the response redirects to the client's redirect URI. Returns that final URL and the pages seen.
 */
export async function runAuthorization(
  service: TestService,
  jar: CookieJar,
  authorizationUrl: string,
  redirectUri: string,
  options: BrowserOptions,
): Promise<{ callback: URL; pages: string[] }> {
  const pages: string[] = [];
  let url = authorizationUrl;
  for (let step = 0; step < 12; step++) {
    if (url.startsWith(redirectUri)) return { callback: new URL(url), pages };
    const response = await jar.fetch(url);
    if (response.status >= 300 && response.status < 400) {
      url = new URL(response.headers.get('location')!, service.url).toString();
      continue;
    }
    const html = await response.text();
    if (response.status !== 200)
      throw new Error(`unexpected ${response.status} at ${url}: ${html.slice(0, 400)}`);
    pages.push(html);
    const path = new URL(url).pathname;
    const next = html.includes('name="decision"')
      ? await postForm(jar, `${service.url}${path}/consent`, {
          csrf: csrfOf(html),
          decision: options.decision ?? 'approve',
        })
      : await postForm(jar, `${service.url}${path}/login`, {
          csrf: csrfOf(html),
          handle: options.handle,
          ...(options.create ? { create: '1' } : {}),
        });
    if (next.status !== 303)
      throw new Error(`form post answered ${next.status}: ${(await next.text()).slice(0, 400)}`);
    url = new URL(next.headers.get('location')!, service.url).toString();
  }
  throw new Error('authorization did not finish');
}

export async function discover(service: TestService): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(service.config.baseUrl);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

/**
 * The OAuth suites' service: development sign-in on, and behind a "proxy" so each test can speak from its
 * own client address (X-Forwarded-For) and never share a rate-limit budget with another test.
 */
export function startOAuthService(
  env: Record<string, string> = {},
  options: Parameters<typeof startTestService>[1] = {},
) {
  return startTestService({ DEV_LOGIN: 'true', TRUST_PROXY: 'true', ...env }, options);
}

/** A fresh client address from TEST-NET-3 (RFC 5737), for the X-Forwarded-For header. */
export function randomAddress(): string {
  const [a, b] = randomBytes(2);
  return `203.0.${a}.${b}`;
}

export async function register(
  service: Pick<TestService, 'url'>,
  metadata: Record<string, unknown>,
  address = randomAddress(),
): Promise<Response> {
  return fetch(`${service.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify(metadata),
  });
}

/**
 * Six registrations from one address (one past the limit of five a minute), asking `services` in turn,
 * and the statuses they got: how the suites watch the registration limit hold, or not.
 */
export async function registerSixTimes(address: string, ...services: Pick<TestService, 'url'>[]) {
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    const response = await register(
      services[i % services.length]!,
      { redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none' },
      address,
    );
    statuses.push(response.status);
  }
  return statuses;
}

/**
 * A registered client for the code and refresh grants, with `metadata`; insists on a 201 and returns its
 * first redirect URI: the registration every flow test starts with.
 */
export async function registerClient(
  service: TestService,
  metadata: { redirect_uris: string[] } & Record<string, unknown>,
): Promise<{ client: oauth.Client; redirectUri: string }> {
  const response = await register(service, {
    grant_types: ['authorization_code', 'refresh_token'],
    ...metadata,
  });
  if (response.status !== 201)
    throw new Error(`registration failed: ${response.status} ${await response.text()}`);
  return { client: (await response.json()) as oauth.Client, redirectUri: metadata.redirect_uris[0]! };
}

/** A registered public client (token_endpoint_auth_method none) with a loopback redirect URI. */
export function registerPublicClient(
  service: TestService,
  extra: Record<string, unknown> = {},
): Promise<{ client: oauth.Client; redirectUri: string }> {
  return registerClient(service, {
    client_name: 'Test agent',
    redirect_uris: ['http://127.0.0.1:53117/callback'],
    token_endpoint_auth_method: 'none',
    ...extra,
  });
}

export interface AuthorizedCode {
  code: string;
  verifier: string;
  callback: URL;
}

/**
 * The URL of an authorization request for `client` with a fresh PKCE pair (S256), plus its verifier: what
 * every test that walks the pages itself (in a real browser, or step by step) starts from. `params` adds
 * the state, scope and the rest.
 */
export async function authorizationRequest(
  service: Pick<TestService, 'url'>,
  client: { client_id: string },
  redirectUri: string,
  params: Record<string, string> = {},
): Promise<{ url: string; verifier: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const url = new URL(`${service.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  }).toString();
  return { url: url.toString(), verifier };
}

/**
 * A public client registered for `redirectUri` (a loopback listener) and its authorization request: where
 * each test that sends a real browser through sign-in and consent starts. `metadata` adds to the registration.
 */
export async function registerAndRequestAuthorization(
  service: TestService,
  redirectUri: string,
  params: Record<string, string>,
  metadata: Record<string, unknown> = {},
): Promise<{ client: oauth.Client; url: string; verifier: string }> {
  const { client } = await registerPublicClient(service, { ...metadata, redirect_uris: [redirectUri] });
  return { client, ...(await authorizationRequest(service, client, redirectUri, params)) };
}

/** Registers nothing: authorizes an existing client through the pages and returns the code. */
export async function authorize(
  service: TestService,
  jar: CookieJar,
  client: { client_id: string },
  redirectUri: string,
  browser: BrowserOptions,
  params: Record<string, string> = {},
): Promise<AuthorizedCode> {
  const { url, verifier } = await authorizationRequest(service, client, redirectUri, {
    state: 'st',
    scope: 'project:read',
    ...params,
  });
  const { callback } = await runAuthorization(service, jar, url, redirectUri, browser);
  const code = callback.searchParams.get('code');
  if (!code) throw new Error(`no code in ${callback}`);
  return { code, verifier, callback };
}

export function tokenRequest(
  service: Pick<TestService, 'url'>,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return fetch(`${service.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/** What the token endpoint answers a successful code exchange with. */
export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  scope: string;
}

/**
 * Exchanges an authorized code (with its PKCE verifier) at /oauth/token and insists on a 200: the last step
 * of every sign-in-and-consent setup, said once. `extra` fields (a resource, a scope) are sent along.
 */
export async function exchangeCode(
  service: Pick<TestService, 'url'>,
  client: { client_id: string },
  redirectUri: string,
  authorized: { code: string; verifier: string },
  extra: Record<string, string> = {},
): Promise<IssuedTokens> {
  const response = await tokenRequest(service, {
    grant_type: 'authorization_code',
    client_id: client.client_id,
    code: authorized.code,
    code_verifier: authorized.verifier,
    redirect_uri: redirectUri,
    ...extra,
  });
  if (response.status !== 200)
    throw new Error(`code exchange answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as IssuedTokens;
}

/**
 * A public client registered, taken through sign-in and consent in `jar`, and its code exchanged: an app
 * connected the way a person connects one, which many suites need before they can say anything else.
 */
export async function connectPublicClient(
  service: TestService,
  jar: CookieJar,
  browser: BrowserOptions,
  params: Record<string, string> = {},
  options: { metadata?: Record<string, unknown>; exchange?: Record<string, string> } = {},
): Promise<{ client: oauth.Client; redirectUri: string; code: string; tokens: IssuedTokens }> {
  const { client, redirectUri } = await registerPublicClient(service, options.metadata);
  const authorized = await authorize(service, jar, client, redirectUri, browser, params);
  const tokens = await exchangeCode(service, client, redirectUri, authorized, options.exchange);
  return { client, redirectUri, code: authorized.code, tokens };
}

/**
 * A second, in-process authorization server on the service's database (as another instance would be),
 * for the verifier the REST and MCP pipelines call.
 */
export async function inProcessOAuth(
  service: TestService,
): Promise<{ oauth: OAuthServer; close(): Promise<void> }> {
  const orm = await openDatabase(service.database.url);
  const ctx = createContext(service.config, orm, createLogger(service.config));
  const server = createOAuthServer(ctx);
  return {
    oauth: server,
    async close() {
      await server.close();
      await orm.close(true);
    },
  };
}

/** Direct SQL on the service's database, to simulate the passing of time. */
export async function sql(service: TestService, query: string, params: unknown[] = []): Promise<unknown[]> {
  const pg = await import('pg');
  const client = new pg.default.Client({ connectionString: service.database.url });
  await client.connect();
  try {
    return (await client.query(query, params)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Moves the client's refresh-token rotations an hour into the past, beyond the grace in which a rotated
 * token may be sent again: from now on, sending one is a replay. For the replay tests in several suites.
 */
export async function pastRotationGrace(service: TestService, clientId: string): Promise<void> {
  await sql(
    service,
    `update oidc_models set consumed_at = consumed_at - interval '1 hour'
     where model = 'RefreshToken' and consumed_at is not null and payload->>'clientId' = $1`,
    [clientId],
  );
}
