// Browser sessions: cookie attributes, a new id at every sign-in, idle and absolute lifetimes, the list of
// one's sessions and ending another one, sign-out that ends the authorization server's session too; and
// sign-in methods through the API (never the last one).

import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { CookieJar, devSignIn, postForm, registerPublicClient, sql, uniqueHandle } from '../oauth/helpers.ts';
import { createTestUser } from '../support/fixtures.ts';
import { useOAuthService } from '../support/suite.ts';

const service = useOAuthService();

/** Development sign-in (this suite tests sessions, not providers); returns the Set-Cookie of the session. */
const signIn = (jar: CookieJar, handle: string) => devSignIn(service, jar, handle, '/settings/tokens');

async function signedInAs(jar: CookieJar): Promise<string | undefined> {
  const page = await jar.fetch(`${service.url}/settings/tokens`);
  return /Signed in as @([a-z0-9-]+)</.exec(await page.text())?.[1];
}

/**
 * Someone new signed in in a jar of their own, whose session's `column` is then set `ago` in the past, as
 * time passing would: the start of each test about how sessions end.
 */
async function signedInAndAged(
  prefix: string,
  column: 'last_seen_at' | 'expires_at' | 'ended_at',
  ago: string,
) {
  const jar = new CookieJar();
  const handle = uniqueHandle(prefix);
  await signIn(jar, handle);
  await sql(
    service,
    `update browser_sessions set ${column} = now() - $2::interval
      where user_id = (select user_id from accounts where handle = $1)`,
    [handle, ago],
  );
  return { jar, handle };
}

describe('browser sessions', () => {
  it('sets an HttpOnly, SameSite=Lax cookie whose value is stored only as a hash', async () => {
    const jar = new CookieJar();
    const handle = uniqueHandle('ck');
    const cookie = await signIn(jar, handle);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).not.toMatch(/Secure/i); // BASE_URL is http here; https makes it Secure
    expect(await signedInAs(jar)).toBe(handle);
    const value = jar.cookies.get('l10n_session')!;
    const rows = await sql(
      service,
      `select 1 from browser_sessions where encode(token_hash, 'escape') like $1 or encode(token_hash, 'hex') = $2`,
      [`%${value}%`, Buffer.from(value).toString('hex')],
    );
    expect(rows).toEqual([]);
  });

  it('gives a new session at every sign-in and ends the previous one', async () => {
    const jar = new CookieJar();
    const handle = uniqueHandle('rot');
    await signIn(jar, handle);
    const first = jar.cookies.get('l10n_session')!;
    await signIn(jar, handle);
    const second = jar.cookies.get('l10n_session')!;
    expect(second).not.toBe(first);
    const stale = new CookieJar();
    stale.cookies.set('l10n_session', first);
    expect(await signedInAs(stale)).toBeUndefined();
    expect(await signedInAs(jar)).toBe(handle);
  });

  it('ends a session after its idle time and after its absolute lifetime', async () => {
    const idle = await signedInAndAged('idle', 'last_seen_at', '4 days');
    expect(await signedInAs(idle.jar)).toBeUndefined();

    const old = await signedInAndAged('abs', 'expires_at', '1 second');
    expect(await signedInAs(old.jar)).toBeUndefined();
  });

  it('lists where a person is signed in and ends another session', async () => {
    const handle = uniqueHandle('two');
    const laptop = new CookieJar();
    const phone = new CookieJar();
    await signIn(laptop, handle);
    await signIn(phone, handle);
    const page = await laptop.fetch(`${service.url}/settings/sessions`);
    const html = await page.text();
    expect(html.match(/<section class="card" aria-labelledby="session-/g)).toHaveLength(2);
    expect(html).toContain('this browser');
    // Times as the other pages write them, the exact instant kept for machines.
    expect(html).toMatch(
      /<dt>Signed in<\/dt><dd><time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">\d{4}-\d\d-\d\d \d\d:\d\d<\/time><\/dd>/,
    );
    // A page of the app like the others: its navigation, and a way past it.
    expect(html).toContain('<a class="skip" href="#main">');
    expect(html).toContain('<nav aria-label="Main">');
    // Ending one is asked first, and each button says which browser it ends to a screen reader.
    expect(html).toContain('<summary>End <bdi>this session</bdi><span class="visually-hidden">: ');
    const [, other, csrf] =
      /action="\/settings\/sessions\/([0-9a-f-]+)\/end">\s*<input type="hidden" name="csrf" value="([^"]+)"/.exec(
        html,
      )!;
    // Without the CSRF token: refused, nothing ended.
    expect((await postForm(laptop, `${service.url}/settings/sessions/${other}/end`, {})).status).toBe(403);
    expect(await signedInAs(phone)).toBe(handle);
    const ended = await postForm(laptop, `${service.url}/settings/sessions/${other}/end`, {
      csrf: csrf!,
    });
    expect(ended.status).toBe(303);
    expect(await signedInAs(phone)).toBeUndefined();
    expect(await signedInAs(laptop)).toBe(handle);
    // The page it leads to says so, and the person's audit log has it.
    const after = await (
      await laptop.fetch(new URL(ended.headers.get('location')!, service.url).href)
    ).text();
    expect(after).toMatch(
      /<div class="card" role="status">Session ended: that browser is signed out\.<\/div>/,
    );
    expect(after.match(/<section class="card" aria-labelledby="session-/g)).toHaveLength(1);
    const audited = await sql(
      service,
      `select e.resource_id, e.details->>'door' as door from audit_events e join accounts a on a.id = e.account_id
        where a.handle = $1 and e.action = 'session.end'`,
      [handle],
    );
    expect(audited).toEqual([{ resource_id: other, door: 'web' }]);
    // This browser's own session is not ended from here (Sign out does that, with the authorization server's).
    const [own] = (await sql(
      service,
      `select s.id from browser_sessions s join accounts a on a.user_id = s.user_id
        where a.handle = $1 and s.ended_at is null`,
      [handle],
    )) as { id: string }[];
    const notOwn = await postForm(laptop, `${service.url}/settings/sessions/${own!.id}/end`, { csrf: csrf! });
    expect(notOwn.status).toBe(303);
    expect(decodeURIComponent(notOwn.headers.get('location')!.replaceAll('+', ' '))).toContain(
      "That is this browser's session",
    );
    expect(await signedInAs(laptop)).toBe(handle);
    // Nor when its id is written in capitals (the same uuid to the database).
    const shouted = await postForm(laptop, `${service.url}/settings/sessions/${own!.id.toUpperCase()}/end`, {
      csrf: csrf!,
    });
    expect(decodeURIComponent(shouted.headers.get('location')!.replaceAll('+', ' '))).toContain(
      "That is this browser's session",
    );
    expect(await signedInAs(laptop)).toBe(handle);
    // Someone else's session cannot be ended from here.
    const stranger = new CookieJar();
    await signIn(stranger, uniqueHandle('str'));
    const [strangerSession] = (await sql(
      service,
      `select id from browser_sessions where ended_at is null order by created_at desc limit 1`,
    )) as {
      id: string;
    }[];
    await postForm(laptop, `${service.url}/settings/sessions/${strangerSession!.id}/end`, {
      csrf: csrf!,
    });
    expect(await signedInAs(stranger)).toBeDefined();
  });

  it('asks again, with a form of this session, when a sign-out comes from a page of an earlier one', async () => {
    // A tab left open: signed out and in again elsewhere since, so its sign-out button carries the CSRF
    // token of a session that is over. It must neither sign out unasked nor leave the person stuck.
    const jar = new CookieJar();
    const handle = uniqueHandle('stl');
    await signIn(jar, handle);
    const signoutToken = async () =>
      /<form method="post" action="\/settings\/signout"[\s\S]*?name="csrf" value="([^"]+)"/.exec(
        await (await jar.fetch(`${service.url}/settings/tokens`)).text(),
      )![1]!;
    const stale = await signoutToken();
    expect((await postForm(jar, `${service.url}/settings/signout`, { csrf: stale })).status).toBe(303);
    await signIn(jar, handle);
    const asked = await postForm(jar, `${service.url}/settings/signout`, { csrf: stale });
    expect(asked.status).toBe(403);
    const html = await asked.text();
    expect(html).toContain('<h1>Sign out?</h1>');
    expect(await signedInAs(jar)).toBe(handle);
    const fresh = /action="\/settings\/signout">\s*<input type="hidden" name="csrf" value="([^"]+)"/.exec(
      html,
    )![1]!;
    expect((await postForm(jar, `${service.url}/settings/signout`, { csrf: fresh })).status).toBe(303);
    expect(await signedInAs(jar)).toBeUndefined();
  });

  it("signs out of the authorization server's session too: the next authorization asks to sign in", async () => {
    const jar = new CookieJar();
    await signIn(jar, uniqueHandle('out'));
    const { client, redirectUri } = await registerPublicClient(service);
    const authorize = `${service.url}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      scope: 'project:read',
    })}`;
    const pageAfter = async () => {
      let response = await jar.fetch(authorize);
      while (response.status === 303 || response.status === 302)
        response = await jar.fetch(new URL(response.headers.get('location')!, service.url).toString());
      return response.text();
    };
    expect(await pageAfter()).toContain('name="decision"'); // signed in: consent at once
    const tokens = await jar.fetch(`${service.url}/settings/tokens`);
    const signout =
      /<form method="post" action="\/settings\/signout"[\s\S]*?name="csrf" value="([^"]+)"/.exec(
        await tokens.text(),
      )![1]!;
    expect((await postForm(jar, `${service.url}/settings/signout`, { csrf: signout })).status).toBe(303);
    const after = await pageAfter();
    expect(after).toContain('Sign in to continue');
    expect(after).not.toContain('name="decision"');
  });
});

describe('sign-in methods through the API', () => {
  it('lists them and never removes the last one', async () => {
    const user = await createTestUser(service, uniqueHandle('api'));
    const listed = await sdk.listIdentities({ client: user.client });
    expect(listed.response.status).toBe(200);
    expect(listed.data!.items).toEqual([
      expect.objectContaining({
        provider: 'github',
        email: `${user.handle}@example.com`,
        emailVerified: true,
        requiredByOrganization: false,
      }),
    ]);
    const last = await sdk.unlinkIdentity({
      client: user.client,
      path: { identity: listed.data!.items[0]!.id },
    });
    expect(last.response.status).toBe(409);
    await sql(
      service,
      `insert into identities (id, user_id, provider, subject, email, email_verified) values (gen_random_uuid(), $1, 'google', $2, null, false)`,
      [user.userId, `g-${user.handle}`],
    );
    const removed = await sdk.unlinkIdentity({
      client: user.client,
      path: { identity: listed.data!.items[0]!.id },
    });
    expect(removed.response.status).toBe(204);
    const after = await sdk.listIdentities({ client: user.client });
    expect(after.data!.items.map((i) => i.provider)).toEqual(['google']);
    // Another user's identity is not found, and nothing changes.
    const other = await createTestUser(service, uniqueHandle('oth'));
    const theirs = await sdk.listIdentities({ client: other.client });
    const foreign = await sdk.unlinkIdentity({
      client: user.client,
      path: { identity: theirs.data!.items[0]!.id },
    });
    expect(foreign.response.status).toBe(404);
    expect((await sdk.listIdentities({ client: other.client })).data!.items).toHaveLength(1);
  });
});

describe('sweeping', () => {
  it('deletes expired sign-in attempts and long-ended sessions, and keeps live ones', async () => {
    const { deleteExpiredSignInRows } = await import('../../src/identity/sessions.ts');
    const { openDatabase } = await import('../../src/db/orm.ts');
    const live = new CookieJar();
    const handle = uniqueHandle('keep');
    await signIn(live, handle);
    const { handle: endedHandle } = await signedInAndAged('gone', 'ended_at', '2 days');
    await sql(
      service,
      `insert into sign_in_attempts (id, expires_at) values (gen_random_uuid(), now() - interval '1 minute')`,
    );
    const orm = await openDatabase(service.database.url);
    try {
      expect(await deleteExpiredSignInRows(orm)).toBeGreaterThanOrEqual(2);
    } finally {
      await orm.close(true);
    }
    expect(await sql(service, `select 1 from sign_in_attempts where expires_at < now()`)).toEqual([]);
    expect(
      await sql(
        service,
        `select 1 from browser_sessions where user_id = (select user_id from accounts where handle = $1)`,
        [endedHandle],
      ),
    ).toEqual([]);
    expect(await signedInAs(live)).toBe(handle);
  });
});

describe('development sign-in', () => {
  it('refuses a development sign-in posted from another site (login CSRF), and takes one from its own page', async () => {
    const crossSite: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'cross-site', origin: 'null' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of crossSite) {
      const response = await fetch(`${service.url}/signin/dev`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ handle: 'mallory', create: '1', next: '/settings/tokens' }),
        redirect: 'manual',
      });
      expect(response.status).toBe(403);
      expect(response.headers.getSetCookie().some((c) => c.startsWith('l10n_session='))).toBe(false);
    }
    const own = await fetch(`${service.url}/signin/dev`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: new URL(service.config.baseUrl).origin,
        'sec-fetch-site': 'same-origin',
      },
      body: new URLSearchParams({ handle: 'mallory', create: '1', next: '/settings/tokens' }),
      redirect: 'manual',
    });
    expect(own.status).toBe(303);
  });
});
