// Who authorizes is whoever is signed in to the service now: after one person authorized an app in a
// browser, someone else signing in there (at /signin, or on the sign-in step of an authorization once the
// first person's browser session ended or expired) authorizes as themselves, and the authorization-server
// session of the first person is ended, as sign-out ends it. Over real HTTP with a cookie jar, and once in
// chromium.

import { describe, expect, it } from 'vitest';
import { resourceFor } from '../../src/oauth/index.ts';
import { hasChromium } from '../support/environment.ts';
import { useChromium, useLoopbackCallback, useOAuthService } from '../support/suite.ts';
import {
  authorizationRequest,
  authorize,
  CookieJar,
  connectPublicClient,
  devSignIn,
  exchangeCode,
  postForm,
  registerPublicClient,
  sql,
  tokenRequest,
  uniqueHandle,
} from './helpers.ts';

const service = useOAuthService();
const browser = useChromium();
const loopback = useLoopbackCallback();

/** The development sign-in at /signin, outside any authorization (as a person signs in to the settings). */
async function signIn(jar: CookieJar, handle: string): Promise<void> {
  await devSignIn(service, jar, handle);
}

/** The handle of the user an access token for the REST API acts for. */
async function tokenHolder(accessToken: string): Promise<string> {
  const me = await fetch(`${service.url}/api/v1/user`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  expect(me.status).toBe(200);
  return ((await me.json()) as { handle: string }).handle;
}

/** Whether oidc-provider still stores the session its cookie named (the cookie value is the row's id). */
async function storedSession(id: string): Promise<boolean> {
  const rows = await sql(service, `select 1 from oidc_models where model = 'Session' and id = $1`, [id]);
  return rows.length > 0;
}

/**
 * Four days without use, as time passing would: a browser session ends after three, while the authorization
 * server's own lasts fourteen.
 */
async function expireBrowserSessions(handle: string): Promise<void> {
  await sql(
    service,
    `update browser_sessions set last_seen_at = now() - interval '4 days'
      where user_id = (select user_id from accounts where handle = $1)`,
    [handle],
  );
}

/**
 * `first` connects an app in a fresh jar (signing in on the authorization's sign-in step), which leaves
 * that browser with both sessions: the service's and the authorization server's. Returns the jar, the
 * app's refresh token and the authorization server's session id at that point.
 */
async function connectedBy(first: string) {
  const jar = new CookieJar();
  const { client, tokens } = await connectPublicClient(service, jar, { handle: first, create: true });
  const authorizationSession = jar.cookies.get('_session');
  expect(authorizationSession).toBeDefined();
  return { jar, client, refreshToken: tokens.refresh_token, authorizationSession: authorizationSession! };
}

/** An authorization for the REST API (so the token says whose it is), through the pages, as `handle`. */
async function authorizeApi(jar: CookieJar, handle: string, create = true) {
  const { client, redirectUri } = await registerPublicClient(service);
  const params = { scope: 'user:read', resource: resourceFor('rest', service.config.baseUrl) };
  const authorized = await authorize(service, jar, client, redirectUri, { handle, create }, params);
  return exchangeCode(service, client, redirectUri, authorized);
}

describe('another person in the same browser', () => {
  it('signed in at /signin: the next authorization is theirs, and the first session is ended', async () => {
    const alice = uniqueHandle('alice');
    const bob = uniqueHandle('bob');
    const { jar, client, refreshToken, authorizationSession } = await connectedBy(alice);

    await signIn(jar, bob);
    const tokens = await authorizeApi(jar, bob);
    expect(await tokenHolder(tokens.access_token)).toBe(bob);
    expect(await storedSession(authorizationSession)).toBe(false);
    expect(jar.cookies.get('_session')).not.toBe(authorizationSession);

    // Like sign-out, this ends a browser session, not the apps alice connected: her refresh token works.
    const refreshed = await tokenRequest(service, {
      grant_type: 'refresh_token',
      client_id: client.client_id,
      refresh_token: refreshToken,
    });
    expect(refreshed.status).toBe(200);
  });

  it('signed in on the sign-in step after the first person ended this browser’s session elsewhere', async () => {
    const alice = uniqueHandle('alice');
    const bob = uniqueHandle('bob');
    const { jar, authorizationSession } = await connectedBy(alice);

    // alice ends this browser's session from another browser's /settings/sessions.
    const laptop = new CookieJar();
    await signIn(laptop, alice);
    const page = await (await laptop.fetch(`${service.url}/settings/sessions`)).text();
    const [, other, csrf] =
      /action="\/settings\/sessions\/([0-9a-f-]+)\/end">\s*<input type="hidden" name="csrf" value="([^"]+)"/.exec(
        page,
      )!;
    const ended = await postForm(laptop, `${service.url}/settings/sessions/${other}/end`, { csrf: csrf! });
    expect(ended.status).toBe(303);

    const tokens = await authorizeApi(jar, bob);
    expect(await tokenHolder(tokens.access_token)).toBe(bob);
    expect(await storedSession(authorizationSession)).toBe(false);
  });

  it('signed in on the sign-in step after the first person’s session expired (idle)', async () => {
    const alice = uniqueHandle('alice');
    const bob = uniqueHandle('bob');
    const { jar, authorizationSession } = await connectedBy(alice);
    await expireBrowserSessions(alice);

    const tokens = await authorizeApi(jar, bob);
    expect(await tokenHolder(tokens.access_token)).toBe(bob);
    expect(await storedSession(authorizationSession)).toBe(false);
  });

  it('the same person signing in again after expiry carries on as before', async () => {
    const alice = uniqueHandle('alice');
    const { jar } = await connectedBy(alice);
    await expireBrowserSessions(alice);

    const tokens = await authorizeApi(jar, alice, false);
    expect(await tokenHolder(tokens.access_token)).toBe(alice);
  });
});

describe.skipIf(!hasChromium)('another person in the same browser, in chromium', () => {
  it('bob, then carol, authorize after alice without anyone signing out', async () => {
    const [alice, bob, carol] = [uniqueHandle('alice'), uniqueHandle('bob'), uniqueHandle('carol')];
    const { client } = await registerPublicClient(service, { redirect_uris: [loopback.uri] });
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const startAuthorization = async () =>
      page.goto((await authorizationRequest(service, client, loopback.uri, { scope: 'project:read' })).url);
    const approveAs = async (handle: string, callbacks: number) => {
      // Before the fix the browser ended on "There is no page at /session/end/confirm" instead.
      await page.getByRole('button', { name: 'Approve' }).or(page.getByText('There is no page')).waitFor();
      expect(await page.locator('main').textContent()).toContain(`@${handle}`);
      await page.getByRole('button', { name: 'Approve' }).click();
      await expect.poll(() => loopback.received.length).toBe(callbacks);
      expect(loopback.received.at(-1)!.searchParams.get('code')).toBeTruthy();
    };
    const signInOnTheStep = async (handle: string) => {
      await page.getByLabel('Handle').fill(handle);
      await page.getByRole('button', { name: 'Create and sign in' }).click();
    };

    await startAuthorization();
    await signInOnTheStep(alice);
    await approveAs(alice, 1);

    // bob signs in through the development sign-in with this browser's cookies, alice still signed in
    // (/signin itself sends a signed-in person on, so the form is posted as its page would post it).
    const signIn = await context.request.post(`${service.url}/signin/dev`, {
      form: { handle: bob, create: '1', next: '/settings/apps' },
      headers: { origin: new URL(service.url).origin },
    });
    expect(signIn.ok()).toBe(true);
    await startAuthorization();
    await approveAs(bob, 2);

    // bob's browser session expires; carol signs in on the authorization's sign-in step.
    await expireBrowserSessions(bob);
    await startAuthorization();
    await signInOnTheStep(carol);
    await approveAs(carol, 3);
    await context.close();
  });
});
