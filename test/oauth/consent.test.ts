// Consent is remembered per user and client, asks again only for new scopes, and the connected-apps
// domain functions list and revoke it.

import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/orm.ts';
import { listConnectedApps, resourceFor, revokeConnectedApp } from '../../src/oauth/index.ts';
import { useOAuthService } from '../support/suite.ts';
import {
  authorizationRequest,
  CookieJar,
  csrfOf,
  exchangeCode,
  postForm,
  registerClient,
  registerPublicClient,
  runAuthorization,
  signedInJar,
  sql,
  tokenRequest,
  uniqueHandle,
} from './helpers.ts';

const service = useOAuthService();

/** A statement on a pool connection of `orm`, for the domain functions a test calls outside any operation. */
const poolStatement =
  (orm: Awaited<ReturnType<typeof openDatabase>>) =>
  <T>(query: string, params: readonly unknown[]) =>
    orm.em.getConnection().execute(query, [...params]) as Promise<T>;

const registerConfidentialClient = () =>
  registerClient(service, {
    client_name: 'Confidential agent',
    redirect_uris: ['http://127.0.0.1:53118/callback'],
    token_endpoint_auth_method: 'client_secret_post',
  });

/** The page an authorization request leads the browser to (redirects followed), and its address. */
async function stepOf(jar: CookieJar, url: string): Promise<{ at: string; page: Response }> {
  let at = url;
  let page = await jar.fetch(at);
  while (page.status >= 300 && page.status < 400) {
    at = new URL(page.headers.get('location')!, service.url).toString();
    page = await jar.fetch(at);
  }
  return { at, page };
}

async function authorizeWith(
  jar: CookieJar,
  clientId: string,
  redirectUri: string,
  scope: string,
  handle: string,
  create = false,
  secret?: string,
) {
  const { url, verifier } = await authorizationRequest(service, { client_id: clientId }, redirectUri, {
    state: 's',
    scope,
  });
  const { callback, pages } = await runAuthorization(service, jar, url, redirectUri, {
    handle,
    create,
  });
  const tokens = await exchangeCode(
    service,
    { client_id: clientId },
    redirectUri,
    { code: callback.searchParams.get('code')!, verifier },
    secret ? { client_secret: secret } : {},
  );
  return { pages, tokens };
}

describe('remembered consent', () => {
  it('skips consent for granted scopes of a confidential client, asks only for new ones, even from a new browser session', async () => {
    const handle = uniqueHandle('cns');
    const { client, redirectUri } = await registerConfidentialClient();
    const secret = String(client.client_secret);
    /** The confidential client's authorization of `scope` for `handle`, in a browser's `jar`. */
    const authorizeIn = (jar: CookieJar, scope: string, create = false) =>
      authorizeWith(jar, client.client_id, redirectUri, scope, handle, create, secret);

    // First time: a sign-in page (creating the user) and a consent page.
    const firstJar = new CookieJar();
    const first = await authorizeIn(firstJar, 'project:read', true);
    expect(first.pages).toHaveLength(2);

    // Same scope again: no page at all.
    const again = await authorizeIn(firstJar, 'project:read');
    expect(again.pages).toHaveLength(0);

    // A new browser (new session): sign-in only; the consent is remembered for this user and client.
    const otherJar = new CookieJar();
    const fresh = await authorizeIn(otherJar, 'project:read');
    expect(fresh.pages).toHaveLength(1);
    expect(fresh.pages[0]).toContain('Sign in');

    // More scopes: the consent page asks only for the new one, and shows the old one as already allowed.
    const more = await authorizeIn(otherJar, 'project:read glossary:write');
    expect(more.pages).toHaveLength(1);
    const asked = more.pages[0]!.split('<details>')[0]!;
    expect(asked).toContain('It asks for more access');
    expect(asked).toContain('Create or update glossary entries');
    expect(asked).not.toContain('Read projects');
    expect(more.tokens.scope.split(' ').sort()).toEqual(['glossary:write', 'project:read']);

    // Each approval is in the person's audit log, with what it added; the remembered ones are not.
    const approvals = (await sql(
      service,
      `select e.details->'scopes' as scopes, e.details->>'door' as door
         from audit_events e join accounts a on a.id = e.account_id
        where e.action = 'app.authorize' and e.resource_id = $1 and a.handle = $2
        order by e.id`,
      [client.client_id, handle],
    )) as { scopes: string[]; door: string }[];
    expect(approvals).toEqual([
      { scopes: ['project:read'], door: 'web' },
      { scopes: ['glossary:write'], door: 'web' },
    ]);
  });

  it('shows a confidential client that asks with prompt=consent what it will carry, not the public-client note', async () => {
    const handle = uniqueHandle('cnp');
    const { client, redirectUri } = await registerConfidentialClient();
    const jar = new CookieJar();
    const secret = String(client.client_secret);
    await authorizeWith(jar, client.client_id, redirectUri, 'project:read', handle, true, secret);

    const { url } = await authorizationRequest(service, client, redirectUri, {
      scope: 'project:read',
      prompt: 'consent',
    });
    const { pages } = await runAuthorization(service, jar, url, redirectUri, { handle });
    expect(pages).toHaveLength(1);
    expect(pages[0]).toContain('name="decision"');
    expect(pages[0]).toContain('Read projects');
    // It holds a secret, and it is not asked each time: the note for public clients would be false here.
    expect(pages[0]).not.toContain('It has no secret');
  });
});

describe('a client asking for a fresh sign-in', () => {
  it('gets one with prompt=login, even with someone signed in, and only a sign-in made since counts', async () => {
    const handle = uniqueHandle('plg');
    const { client, redirectUri } = await registerConfidentialClient();
    const secret = String(client.client_secret);
    const jar = new CookieJar();
    // Signed in, consent remembered: a plain authorization shows no page at all.
    await authorizeWith(jar, client.client_id, redirectUri, 'project:read', handle, true, secret);
    expect(
      (await authorizeWith(jar, client.client_id, redirectUri, 'project:read', handle, false, secret)).pages,
    ).toHaveLength(0);

    // prompt=login: the sign-in page, although this browser is signed in; signing in there goes on.
    const { url, verifier } = await authorizationRequest(service, client, redirectUri, {
      scope: 'project:read',
      prompt: 'login',
    });
    const { pages, callback } = await runAuthorization(service, jar, url, redirectUri, { handle });
    expect(pages).toHaveLength(1);
    expect(pages[0]).toContain('/login"');
    expect(pages[0]).not.toContain('name="decision"');
    const tokens = await exchangeCode(
      service,
      client,
      redirectUri,
      { code: callback.searchParams.get('code')!, verifier },
      { client_secret: secret },
    );
    expect(tokens.scope).toBe('project:read');
  });
});

describe('someone else at the consent page', () => {
  it('"Not you?" signs the named person out and asks who authorizes; the token is of whoever signs in then', async () => {
    const first = uniqueHandle('nya');
    const second = uniqueHandle('nyb');
    const { client, redirectUri } = await registerConfidentialClient();
    const jar = await signedInJar(service, first);
    const { url, verifier } = await authorizationRequest(service, client, redirectUri, {
      scope: 'user:read',
      resource: resourceFor('rest', service.config.baseUrl),
    });
    // Signed in already: straight to the consent page, which names who is signed in and offers the switch.
    const { at, page } = await stepOf(jar, url);
    const consent = await page.text();
    expect(consent).toContain(`Signed in as <strong>@${first}</strong>`);
    const step = new URL(at).pathname;
    expect(consent).toContain(`action="${step}/switch"`);

    // A forged switch (no CSRF token) changes nothing: the person stays signed in.
    expect((await postForm(jar, `${service.url}${step}/switch`, {})).status).toBe(403);
    expect((await jar.fetch(`${service.url}/dashboard`)).status).toBe(200);

    const switched = await postForm(jar, `${service.url}${step}/switch`, { csrf: csrfOf(consent) });
    expect(switched.status).toBe(303);
    // The authorization goes on to its sign-in step, with nobody signed in any more.
    const { at: signInAt, page: signInPage } = await stepOf(
      jar,
      new URL(switched.headers.get('location')!, service.url).href,
    );
    const signIn = await signInPage.text();
    expect(signIn).toContain('Sign in to continue to');
    expect(signIn).not.toContain('name="decision"');
    expect((await jar.fetch(`${service.url}/dashboard`)).status).toBe(303);

    // The other person signs in there and approves: the code's token is theirs, not the first person's.
    const signedIn = await postForm(jar, `${service.url}${new URL(signInAt).pathname}/login`, {
      csrf: csrfOf(signIn),
      handle: second,
      create: '1',
    });
    expect(signedIn.status).toBe(303);
    const { callback, pages } = await runAuthorization(
      service,
      jar,
      new URL(signedIn.headers.get('location')!, service.url).href,
      redirectUri,
      { handle: second },
    );
    expect(pages).toHaveLength(1);
    expect(pages[0]).toContain(`Signed in as <strong>@${second}</strong>`);
    const tokens = await exchangeCode(
      service,
      client,
      redirectUri,
      { code: callback.searchParams.get('code')!, verifier },
      { client_secret: String(client.client_secret) },
    );
    const me = await fetch(`${service.url}/api/v1/user`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(((await me.json()) as { handle: string }).handle).toBe(second);
    // The first person authorized nothing.
    const approvals = await sql(
      service,
      `select a.handle from audit_events e join accounts a on a.id = e.account_id
        where e.action = 'app.authorize' and e.resource_id = $1`,
      [client.client_id],
    );
    expect(approvals).toEqual([{ handle: second }]);
  });

  it('leads a second tab of the step on to the sign-in, approving nothing, where it answered 500', async () => {
    const first = uniqueHandle('nyd');
    const { client, redirectUri } = await registerConfidentialClient();
    const jar = await signedInJar(service, first);
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'project:read' });
    const { at, page } = await stepOf(jar, url);
    const consent = await page.text();
    const step = new URL(at).pathname;
    // One tab switches; its redirect is not followed (the other tab is still on the consent page).
    expect((await postForm(jar, `${service.url}${step}/switch`, { csrf: csrfOf(consent) })).status).toBe(303);
    // The other tab reloads, or approves with the form it has: both go on to the sign-in step.
    const reloaded = await jar.fetch(`${service.url}${step}`);
    expect(reloaded.status).toBe(303);
    const approved = await postForm(jar, `${service.url}${step}/consent`, {
      csrf: csrfOf(consent),
      decision: 'approve',
    });
    expect(approved.status).toBe(303);
    const { page: next } = await stepOf(jar, new URL(approved.headers.get('location')!, service.url).href);
    expect(next.status).toBe(200);
    const html = await next.text();
    expect(html).toContain('Sign in to continue to');
    expect(html).not.toContain('name="decision"');
    expect(
      await sql(service, `select 1 from audit_events where action = 'app.authorize' and resource_id = $1`, [
        client.client_id,
      ]),
    ).toEqual([]);
  });

  it('is refused once the consent page was answered', async () => {
    const { client, redirectUri } = await registerConfidentialClient();
    const jar = await signedInJar(service, uniqueHandle('nyc'));
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'project:read' });
    const { at, page } = await stepOf(jar, url);
    const consent = await page.text();
    const step = new URL(at).pathname;
    const approved = await postForm(jar, `${service.url}${step}/consent`, {
      csrf: csrfOf(consent),
      decision: 'approve',
    });
    expect(approved.status).toBe(303);
    const late = await postForm(jar, `${service.url}${step}/switch`, { csrf: csrfOf(consent) });
    expect(late.status).toBe(400);
    expect(await late.text()).toContain('This step is over');
    // Still signed in: a late switch signs no one out.
    expect((await jar.fetch(`${service.url}/dashboard`)).status).toBe(200);
  });
});

describe("an app's sign-in step", () => {
  it('keeps the app when "Sign in with your organization" cannot go on: the step again, the e-mail kept, why at the field', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const jar = new CookieJar();
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'project:read' });
    const { at } = await stepOf(jar, url);
    const step = new URL(at).pathname;
    expect(step).toMatch(/^\/oauth\/interaction\//);
    const email = `bob@nowhere-${uniqueHandle('x')}.example`;
    // A next that already says something of its own (a hand-made link) is told this reason, not both.
    const sent = await jar.fetch(
      `${service.url}/signin/org?${new URLSearchParams({ email, next: `${step}?org_error=invalid&email=zz` })}`,
    );
    expect(sent.status).toBe(303);
    const again = await jar.fetch(new URL(sent.headers.get('location')!, service.url).href);
    expect(again.status).toBe(200);
    const html = await again.text();
    expect(html).toContain('Sign in to continue to <bdi>Test agent</bdi>');
    expect(html).toContain(
      `value="${email}" aria-invalid="true" aria-describedby="work-email-error" autofocus`,
    );
    expect(html).toContain('No organization here signs in people with that e-mail domain.');
    expect(html).toContain('<title>Error: Sign in');
    expect(html).toContain('/abort"');
  });
});

describe("the development sign-in of an app's sign-in step", () => {
  it('sent twice (a double click on "Create and sign in") signs in twice, not "the handle is taken"', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const jar = new CookieJar();
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'project:read' });
    const { at, page } = await stepOf(jar, url);
    const html = await page.text();
    const form = { csrf: csrfOf(html), handle: uniqueHandle('twice'), create: '1' };
    const login = `${service.url}${new URL(at).pathname}/login`;
    const first = await postForm(jar, login, form);
    const second = await postForm(jar, login, form);
    expect([first.status, second.status]).toEqual([303, 303]);
  });
});

describe('approving twice', () => {
  it('(a double click) records one grant and one approval, and every answer leads on', async () => {
    const handle = uniqueHandle('dbl');
    // Signed in first, through another app, so this app's first authorization opens on its consent page.
    const other = await registerPublicClient(service);
    const jar = new CookieJar();
    await authorizeWith(jar, other.client.client_id, other.redirectUri, 'project:read', handle, true);
    const { client, redirectUri } = await registerPublicClient(service);
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'glossary:read' });
    const { at, page } = await stepOf(jar, url);
    const html = await page.text();
    expect(html).toContain('name="decision"');
    const consent = `${service.url}${new URL(at).pathname}/consent`;
    const answer = (decision: string) => postForm(jar, consent, { csrf: csrfOf(html), decision });
    // A dozen at once: more than the database pool has connections, so no answer may hold one while it waits.
    const answers = await Promise.all(Array.from({ length: 12 }, () => answer('approve')));
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(303));
    expect(new Set(answers.map((a) => a.headers.get('location'))).size).toBe(1);
    const grants = await sql(
      service,
      `select 1 from oidc_models where model = 'Grant' and payload->>'clientId' = $1`,
      [client.client_id],
    );
    expect(grants).toHaveLength(1);
    const approvals = await sql(
      service,
      `select 1 from audit_events where action = 'app.authorize' and resource_id = $1`,
      [client.client_id],
    );
    expect(approvals).toHaveLength(1);

    // The browser goes on (the authorization resumes and the app gets its code); Back to the consent page
    // then finds the step answered, and says so rather than that something expired.
    const resumed = await jar.fetch(new URL(answers[0]!.headers.get('location')!, service.url).href);
    expect(resumed.headers.get('location')).toMatch(/^http:\/\/127\.0\.0\.1:53117\/callback\?code=/);
    const back = await jar.fetch(at);
    expect(back.status).toBe(400);
    expect(back.headers.get('cache-control')).toBe('no-store');
    expect(await back.text()).toContain('<h1>This step is over</h1>');
  });

  it('then Deny (pressed before the page changed) overrides nothing: the app gets its code', async () => {
    const other = await registerPublicClient(service);
    const jar = new CookieJar();
    await authorizeWith(
      jar,
      other.client.client_id,
      other.redirectUri,
      'project:read',
      uniqueHandle('apd'),
      true,
    );
    const { client, redirectUri } = await registerPublicClient(service);
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'glossary:read' });
    const { at, page } = await stepOf(jar, url);
    const csrf = csrfOf(await page.text());
    const consent = `${service.url}${new URL(at).pathname}/consent`;
    const approved = await postForm(jar, consent, { csrf, decision: 'approve' });
    const denied = await postForm(jar, consent, { csrf, decision: 'deny' });
    expect([approved.status, denied.status]).toEqual([303, 303]);
    expect(denied.headers.get('location')).toBe(approved.headers.get('location'));
    const resumed = await jar.fetch(new URL(denied.headers.get('location')!, service.url).href);
    expect(resumed.headers.get('location')).toMatch(/^http:\/\/127\.0\.0\.1:53117\/callback\?code=/);
  });
});

describe('public clients (no secret)', () => {
  it('cannot reorder the words around their name with bidirectional formatting characters', async () => {
    // U+202E (right-to-left override) would turn the rest of the heading around.
    const name = 'Docs helper\u202e tnuocca ruoy\u202c';
    const { client, redirectUri } = await registerPublicClient(service, { client_name: name });
    const jar = new CookieJar();
    const { pages } = await authorizeWith(
      jar,
      client.client_id,
      redirectUri,
      'project:read',
      uniqueHandle('bidi'),
      true,
    );
    for (const html of pages) expect(html).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
    expect(pages.at(-1)).toContain('Allow <strong><bdi>Docs helper tnuocca ruoy</bdi></strong> to access');
    const apps = await jar.fetch(`${service.url}/settings/apps`);
    const listed = await apps.text();
    expect(listed).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
    expect(listed).toContain('<bdi>Docs helper tnuocca ruoy</bdi>');
  });

  it('show a private-use scheme as registered and every scope group by its name', async () => {
    const redirectUri = 'com.example.app:/oauth2redirect';
    const { client } = await registerPublicClient(service, { redirect_uris: [redirectUri] });
    const { pages } = await authorizeWith(
      new CookieJar(),
      client.client_id,
      redirectUri,
      'project:read audit:read',
      uniqueHandle('pus'),
      true,
    );
    const consent = pages.at(-1)!;
    expect(consent).toContain('sent back to <strong><code>com.example.app:</code></strong>');
    expect(consent).toMatch(/<h3>Audit log<\/h3>/);
    // Where it acts: the scopes reach the person's organizations too, as far as their role allows.
    expect(consent).toContain('in each of your organizations as far as your role there allows');
  });

  it('see the consent page on every authorization, whatever the loopback port (RFC 8252 §8.6)', async () => {
    const handle = uniqueHandle('pub');
    const { client, redirectUri } = await registerPublicClient(service);
    const jar = new CookieJar();
    const first = await authorizeWith(jar, client.client_id, redirectUri, 'project:read', handle, true);
    expect(first.pages).toHaveLength(2);

    // Approved once, same browser session, same scope, another loopback port: asked again, no silent code.
    const otherPort = 'http://127.0.0.1:61998/callback';
    const again = await authorizeWith(jar, client.client_id, otherPort, 'project:read', handle);
    expect(again.pages).toHaveLength(1);
    expect(again.pages[0]).toContain('name="decision"');
    expect(again.pages[0]).toContain('You allowed this app before');
    expect(again.pages[0]).toContain('Read projects');

    // The registered redirect URI too: nothing proves the app listening there is the approved one.
    const same = await authorizeWith(jar, client.client_id, redirectUri, 'project:read', handle);
    expect(same.pages).toHaveLength(1);
    expect(same.pages[0]).toContain('name="decision"');

    // prompt=none cannot skip the person: the client gets an error and no code.
    const { url } = await authorizationRequest(service, client, otherPort, {
      state: 's',
      scope: 'project:read',
      prompt: 'none',
    });
    const { callback } = await runAuthorization(service, jar, url, otherPort, { handle });
    expect(callback.searchParams.get('code')).toBeNull();
    expect(callback.searchParams.get('error')).toBe('interaction_required');
  });
});

describe('connected apps', () => {
  it('lists the apps a user authorized and revokes one with all its tokens', async () => {
    const handle = uniqueHandle('apps');
    const jar = new CookieJar();
    const a = await registerPublicClient(service, { client_name: 'App A' });
    const b = await registerPublicClient(service, { client_name: 'App B' });
    const tokensA = await authorizeWith(jar, a.client.client_id, a.redirectUri, 'project:read', handle, true);
    await authorizeWith(jar, b.client.client_id, b.redirectUri, 'glossary:read voice:read', handle);

    const rows = (await sql(service, 'select user_id as id from accounts where handle = $1', [handle])) as {
      id: string;
    }[];
    const userId = rows[0]!.id;
    const orm = await openDatabase(service.database.url);
    try {
      const apps = await listConnectedApps(orm, userId);
      expect(apps.map((app) => app.clientName).sort()).toEqual(['App A', 'App B']);
      const appB = apps.find((app) => app.clientName === 'App B')!;
      expect(appB.scopes).toEqual(['glossary:read', 'voice:read']);
      expect(appB.firstUsedAt.getTime()).toBeLessThanOrEqual(appB.lastUsedAt.getTime());

      expect(await revokeConnectedApp(poolStatement(orm), userId, a.client.client_id)).toBe(true);
      expect(await revokeConnectedApp(poolStatement(orm), userId, a.client.client_id)).toBe(false);
      expect((await listConnectedApps(orm, userId)).map((app) => app.clientName)).toEqual(['App B']);
      const left = await sql(
        service,
        `select model from oidc_models where payload->>'clientId' = $1 and model in ('AccessToken', 'RefreshToken', 'Grant')`,
        [a.client.client_id],
      );
      expect(left).toEqual([]);
      const refresh = await tokenRequest(service, {
        grant_type: 'refresh_token',
        client_id: a.client.client_id,
        refresh_token: tokensA.tokens.refresh_token,
      });
      expect(refresh.status).toBe(400);
    } finally {
      await orm.close(true);
    }
  });
});
