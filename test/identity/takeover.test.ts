// Takeover attempts against sign-in, each refused: an unverified provider e-mail never links to an
// existing user; a provider subject cannot be attached to a second user; a replayed, forged or foreign
// `state`; a callback carrying another browser's state; a provider error; a subject or claims that cannot
// be stored. Over plain HTTP with a cookie
// jar, against a GitHub stand-in and an upstream oidc-provider.

import { describe, expect, it } from 'vitest';
import { DEFAULT_NEXT } from '../../src/web/sign-in/routes.ts';
import { CookieJar, postForm, sql, uniqueHandle } from '../oauth/helpers.ts';
import { createTestUser } from '../support/fixtures.ts';
import { upstreamLogin, useUpstreamSignIn } from './upstream.ts';

const { service, upstream: google, github } = useUpstreamSignIn('google', { asGoogle: true });
let nextGithubId = 9000;

/** Starts a GitHub sign-in in this jar; returns the callback URL the stand-in sends the browser back to. */
async function startGithub(jar: CookieJar, query = ''): Promise<string> {
  const start = await jar.fetch(`${service.url}/signin/github${query}`);
  expect(start.status).toBe(303);
  const atGithub = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  expect(atGithub.status).toBe(302);
  return atGithub.headers.get('location')!;
}

function githubUser(email: string, verified: boolean) {
  github.user = {
    id: nextGithubId++,
    login: uniqueHandle('gh'),
    emails: [{ email, primary: true, verified }],
  };
  return github.user;
}

/** Someone new signed in through Google in a jar of their own, with a verified address at example.net. */
async function signInWithGoogle(prefix: string): Promise<{ login: string; jar: CookieJar }> {
  const login = uniqueHandle(prefix);
  google.accounts.set(login, {
    email: `${login}@example.net`,
    email_verified: true,
    preferred_username: login,
  });
  const jar = new CookieJar();
  const start = await jar.fetch(`${service.url}/signin/google`);
  const back = await upstreamLogin(jar, start.headers.get('location')!, login);
  expect((await jar.fetch(back)).status).toBe(303);
  return { login, jar };
}

async function whoIsSignedIn(jar: CookieJar): Promise<string | undefined> {
  const page = await jar.fetch(`${service.url}/settings/tokens`);
  // The settings header names who is signed in.
  return /Signed in as @([a-z0-9-]+)</.exec(await page.text())?.[1];
}

describe('takeover attempts', () => {
  it('an unverified provider e-mail never links to the user who owns that address', async () => {
    const victim = await createTestUser(service, uniqueHandle('victim'));
    githubUser(`${victim.handle}@example.com`, false);
    const jar = new CookieJar();
    const callback = await jar.fetch(await startGithub(jar));
    expect(callback.status).toBe(303);
    const handle = await whoIsSignedIn(jar);
    expect(handle).toBeDefined();
    expect(handle).not.toBe(victim.handle);
    const [identity] = (await sql(
      service,
      `select user_id, email_verified from identities where subject = $1`,
      [String(github.user.id)],
    )) as { user_id: string; email_verified: boolean }[];
    expect(identity).toMatchObject({ email_verified: false });
    expect(identity!.user_id).not.toBe(victim.userId);
    // Nor does the address become the new user's: an unverified e-mail is not theirs.
    const [user] = (await sql(service, `select email from users where id = $1`, [identity!.user_id])) as {
      email: string | null;
    }[];
    expect(user!.email).toBeNull();
  });

  it('a provider subject cannot be attached to a second user', async () => {
    const owner = githubUser(`${uniqueHandle('own')}@example.org`, true);
    const ownerJar = new CookieJar();
    expect((await ownerJar.fetch(await startGithub(ownerJar))).status).toBe(303);
    const ownerId = (
      (await sql(service, `select user_id from identities where provider = 'github' and subject = $1`, [
        String(owner.id),
      ])) as { user_id: string }[]
    )[0]!.user_id;

    // Someone else, signed in through Google, tries to link that same GitHub account to themselves.
    const { jar } = await signInWithGoogle('other');
    github.user = owner;
    const link = await jar.fetch(await startGithub(jar, '?link=1&next=/settings/identities'));
    expect(link.status).toBe(403);
    const page = await link.text();
    expect(page).toContain('already linked to another user');
    // They are still signed in, and the page says so: its way back is their sign-in methods, not sign-in.
    expect(page).not.toContain('You are not signed in');
    expect(page).toContain('href="/settings/identities"');
    expect(await whoIsSignedIn(jar)).toBeDefined();
    const rows = (await sql(
      service,
      `select user_id from identities where provider = 'github' and subject = $1`,
      [String(owner.id)],
    )) as { user_id: string }[];
    expect(rows).toEqual([{ user_id: ownerId }]);
  });

  it('links a second provider only from a signed-in session, and removes it again (never the last)', async () => {
    // Without a session, "link" asks to sign in first.
    const anonymous = await new CookieJar().fetch(`${service.url}/signin/github?link=1`);
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe(
      `/signin?next=${encodeURIComponent('/settings/identities')}`,
    );

    const { login, jar } = await signInWithGoogle('link');
    const me = await whoIsSignedIn(jar);
    const linked = githubUser(`${login}@example.net`, true);
    const back = await jar.fetch(await startGithub(jar, '?link=1&next=/settings/identities'));
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe('/settings/identities');
    expect(await whoIsSignedIn(jar)).toBe(me);
    // Linked is audited like unlinked: once, on the person's own account, from the web door.
    expect(
      await sql(
        service,
        `select e.resource_id = i.id::text as same, a.handle, e.details->>'door' as door, e.details->>'provider' as provider
           from audit_events e join identities i on i.subject = $1 join accounts a on a.id = e.account_id
          where e.action = 'identity.link'`,
        [String(linked.id)],
      ),
    ).toEqual([{ same: true, handle: me, door: 'web', provider: 'github' }]);
    const page = await (await jar.fetch(`${service.url}/settings/identities`)).text();
    expect(page).toMatch(/<h2 id="identity-[0-9a-f-]+">Google<\/h2>/);
    expect(page).toMatch(/<h2 id="identity-[0-9a-f-]+">GitHub<\/h2>/);
    // The profile lists them too, and links to the page that manages them.
    const profile = await (await jar.fetch(`${service.url}/settings/profile`)).text();
    expect(profile).toMatch(/<td>GitHub<\/td><td>[^<]+@example\.net<\/td><td>yes<\/td>/);
    expect(profile).toContain('href="/settings/identities"');

    // The linked GitHub account now signs in as the same person.
    const elsewhere = new CookieJar();
    github.user = linked;
    expect((await elsewhere.fetch(await startGithub(elsewhere))).status).toBe(303);
    expect(await whoIsSignedIn(elsewhere)).toBe(me);

    // Remove GitHub; then Google is the last one and cannot be removed.
    const forms = [
      ...page.matchAll(
        /action="\/settings\/identities\/([0-9a-f-]+)\/unlink">\s*<input type="hidden" name="csrf" value="([^"]+)"/g,
      ),
    ];
    expect(forms).toHaveLength(2);
    const github1 = forms[1]!;
    expect(
      (await postForm(jar, `${service.url}/settings/identities/${github1[1]}/unlink`, { csrf: github1[2]! }))
        .status,
    ).toBe(303);
    const google1 = forms[0]!;
    const last = await postForm(jar, `${service.url}/settings/identities/${google1[1]}/unlink`, {
      csrf: google1[2]!,
    });
    expect(last.status).toBe(409);
    expect(await last.text()).toContain('cannot be removed');
    // A form without this session's CSRF token is refused and removes nothing.
    expect(
      (await postForm(jar, `${service.url}/settings/identities/${google1[1]}/unlink`, { csrf: 'forged' }))
        .status,
    ).toBe(403);
    // The removal went through the operation pipeline: audited, from the web door.
    expect(
      await sql(
        service,
        `select action, resource_id, details->>'door' as door from audit_events where action = 'identity.unlink'
          and resource_id = $1`,
        [github1[1]],
      ),
    ).toEqual([{ action: 'identity.unlink', resource_id: github1[1], door: 'web' }]);
    expect(
      await sql(service, `select provider from identities where subject in ($1, $2)`, [
        login,
        String(linked.id),
      ]),
    ).toEqual([{ provider: 'google' }]);
  });

  it('a first sign-in finished in several browsers at once signs each in as the one person it creates', async () => {
    // The callbacks race to create the person; the losers met the identity's unique key and answered 500.
    for (let round = 0; round < 3; round++) {
      const login = uniqueHandle('race');
      google.accounts.set(login, {
        email: `${login}@example.net`,
        email_verified: true,
        preferred_username: login,
      });
      const jars = [new CookieJar(), new CookieJar(), new CookieJar()];
      const callbacks = await Promise.all(
        jars.map(async (jar) => {
          const start = await jar.fetch(`${service.url}/signin/google`);
          return upstreamLogin(jar, start.headers.get('location')!, login);
        }),
      );
      const answers = await Promise.all(jars.map((jar, i) => jar.fetch(callbacks[i]!)));
      expect(answers.map((answer) => answer.status)).toEqual([303, 303, 303]);
      const handles = await Promise.all(jars.map(whoIsSignedIn));
      expect(new Set(handles).size).toBe(1);
      expect(handles[0]).toBeDefined();
      expect(
        await sql(
          service,
          `select count(*)::int as n from identities where provider = 'google' and email = $1`,
          [`${login}@example.net`],
        ),
      ).toEqual([{ n: 1 }]);
    }
  });

  it('a long name from the provider is cut between two characters, and one of spaces is no name', async () => {
    for (const [name, stored] of [
      [`${'a'.repeat(99)}😀😀`, `${'a'.repeat(99)}😀`], // slice() left half of the emoji, stored as U+FFFD
      ['   ', null],
    ] as const) {
      const login = uniqueHandle('nm');
      google.accounts.set(login, {
        email: `${login}@example.net`,
        email_verified: true,
        preferred_username: login,
        name,
      });
      const jar = new CookieJar();
      const start = await jar.fetch(`${service.url}/signin/google`);
      expect((await jar.fetch(await upstreamLogin(jar, start.headers.get('location')!, login))).status).toBe(
        303,
      );
      const [user] = (await sql(
        service,
        `select u.display_name as "displayName" from users u join identities i on i.user_id = u.id where i.email = $1`,
        [`${login}@example.net`],
      )) as { displayName: string }[];
      // Without a name, the username stands in for one.
      expect(user!.displayName).toBe(stored ?? login);
    }
  });

  it('a replayed callback (same state, same cookie) is refused', async () => {
    githubUser(`${uniqueHandle('re')}@example.org`, true);
    const jar = new CookieJar();
    const callbackUrl = await startGithub(jar);
    const cookie = jar.header();
    const first = await jar.fetch(callbackUrl);
    expect(first.status).toBe(303);
    // An attacker who captured the whole request replays it, cookie included.
    const replay = await fetch(callbackUrl, { headers: { cookie }, redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect(replay.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await replay.text()).toContain('Back to sign-in');
    expect(
      replay.headers
        .getSetCookie()
        .some((c) => c.startsWith('l10n_session=') && !c.startsWith('l10n_session=;')),
    ).toBe(false);
  });

  it('a forged or missing state is refused, and so is a callback without its cookie', async () => {
    githubUser(`${uniqueHandle('fs')}@example.org`, true);
    const jar = new CookieJar();
    const callbackUrl = new URL(await startGithub(jar));
    const forged = new URL(callbackUrl);
    forged.searchParams.set('state', 'forged');
    expect((await jar.fetch(forged.toString())).status).toBe(400);
    const missing = new URL(callbackUrl);
    missing.searchParams.delete('state');
    expect((await new CookieJar().fetch(missing.toString())).status).toBe(400);
    // No cookie at all (another browser, or none).
    expect((await new CookieJar().fetch(callbackUrl.toString())).status).toBe(400);
    expect(await whoIsSignedIn(jar)).toBeUndefined();
  });

  it("a callback carrying another browser's state is refused; that browser can still finish", async () => {
    githubUser(`${uniqueHandle('vi')}@example.org`, true);
    const victim = new CookieJar();
    const victimCallback = await startGithub(victim);
    const attacker = new CookieJar();
    await startGithub(attacker);
    // The attacker's browser (with its own pending sign-in) opens the victim's callback.
    const crossed = await attacker.fetch(victimCallback);
    expect(crossed.status).toBe(400);
    expect(await whoIsSignedIn(attacker)).toBeUndefined();
    // Or the attacker plants its callback in the victim's browser (login CSRF): refused as well.
    const attackerOwn = new CookieJar();
    const planted = await startGithub(attackerOwn);
    const other = new CookieJar();
    const otherCallback = await startGithub(other);
    expect((await other.fetch(planted)).status).toBe(400);
    // The planted callback does not cancel that browser's own sign-in in progress (nor does a second tab's).
    expect((await other.fetch(otherCallback)).status).toBe(303);
    expect(await whoIsSignedIn(other)).toBeDefined();
    // The victim's own sign-in is unharmed.
    expect((await victim.fetch(victimCallback)).status).toBe(303);
    expect(await whoIsSignedIn(victim)).toBeDefined();
  });

  it('a provider error (the person denied) shows a page with a way back, never a 500', async () => {
    const jar = new CookieJar();
    const callbackUrl = new URL(await startGithub(jar));
    const denied = new URL(`${service.url}/signin/callback/github`);
    denied.searchParams.set('error', 'access_denied');
    denied.searchParams.set('state', callbackUrl.searchParams.get('state')!);
    const response = await jar.fetch(denied.toString());
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain('You did not allow the sign-in.');
    expect(text).toContain('href="/signin?next=');
    // Unknown provider and a callback of a provider that is not configured: 404 page, not a crash.
    expect((await jar.fetch(`${service.url}/signin/nope`)).status).toBe(404);
    expect((await new CookieJar().fetch(`${service.url}/signin/callback/oidc?code=x&state=y`)).status).toBe(
      400,
    );
  });

  it("a provider's subject or claims this service cannot store end in a page with a way back, never a 500", async () => {
    const viaGoogle = async (login: string, claims: Record<string, unknown>) => {
      google.accounts.set(login, claims);
      const jar = new CookieJar();
      const start = await jar.fetch(`${service.url}/signin/google`);
      const response = await jar.fetch(await upstreamLogin(jar, start.headers.get('location')!, login));
      return { jar, response };
    };
    // A subject longer than identities hold: refused with words, nobody signed in, nothing stored.
    const long = `x${'y'.repeat(300)}`;
    const tooLong = await viaGoogle(long, {
      email: `${uniqueHandle('l')}@example.net`,
      email_verified: true,
    });
    expect(tooLong.response.status).toBe(400);
    expect(tooLong.response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await tooLong.response.text()).toContain('Back to sign-in');
    expect(await whoIsSignedIn(tooLong.jar)).toBeUndefined();
    expect(await sql(service, `select 1 from identities where subject like 'xyyy%'`)).toEqual([]);

    // A name and e-mail with a NUL, an e-mail that is no address: left out, and the person signs in.
    const nul = uniqueHandle('nul');
    const odd = await viaGoogle(nul, {
      email: 'a\u0000b@example.net',
      email_verified: true,
      name: 'Ann\u0000',
    });
    expect(odd.response.status).toBe(303);
    expect(await whoIsSignedIn(odd.jar)).toBeDefined();
    const noAddress = uniqueHandle('noaddr');
    const notEmail = await viaGoogle(noAddress, { email: 'not an address', email_verified: true });
    expect(notEmail.response.status).toBe(303);
    expect(
      await sql(service, `select subject, email from identities where subject in ($1, $2) order by subject`, [
        noAddress,
        nul,
      ]),
    ).toEqual([
      { subject: noAddress, email: null },
      { subject: nul, email: null },
    ]);

    // GitHub: a login and name with control characters.
    github.user = { id: nextGithubId++, login: 'oc\u0000to', name: 'Oc\u0001to', emails: [] };
    const jar = new CookieJar();
    expect((await jar.fetch(await startGithub(jar))).status).toBe(303);
    expect(await whoIsSignedIn(jar)).toBeDefined();
  });

  it('GitHub answering its API with something that is not a user shows a page with a way back, never a 500', async () => {
    // A proxy's page, or JSON that is not a user.
    for (const answer of ['<html>Unicorn!</html>', 'null', '[]']) {
      githubUser(`${uniqueHandle('gj')}@example.org`, true);
      github.userAnswer = answer;
      const broken = new CookieJar();
      const response = await broken.fetch(await startGithub(broken));
      expect(response.status, answer).toBe(400);
      expect(await response.text()).toContain('GitHub did not tell who signed in.');
    }
    github.userAnswer = undefined;
  });

  it('a page address too long to carry through the provider still signs in, at the default page', async () => {
    githubUser(`${uniqueHandle('ln')}@example.org`, true);
    const jar = new CookieJar();
    const next = `/settings/tokens?q=${'a'.repeat(5000)}`;
    const start = await jar.fetch(`${service.url}/signin/github?next=${encodeURIComponent(next)}`);
    expect(start.status).toBe(303);
    // Browsers drop a cookie over 4096 bytes (name and value): its callback would fail every time, and
    // "Back to sign-in" would start the same sign-in again.
    const pending = start.headers.getSetCookie().find((c) => c.startsWith('l10n_signin='))!;
    expect(pending.split(';')[0]!.length).toBeLessThanOrEqual(4096);
    const atGithub = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const back = await jar.fetch(atGithub.headers.get('location')!);
    expect(back.status).toBe(303);
    expect(back.headers.get('location')).toBe(DEFAULT_NEXT);
    expect(await whoIsSignedIn(jar)).toBeDefined();
  });
});
