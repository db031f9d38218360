// Every way a client can get it wrong is refused with the right error, and nothing is issued.

import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceFor } from '../../src/oauth/index.ts';
import { useOAuthService } from '../support/suite.ts';
import {
  authorizationRequest,
  authorize,
  CookieJar,
  inProcessOAuth,
  pastRotationGrace,
  registerPublicClient,
  sql,
  tokenRequest,
  uniqueHandle,
} from './helpers.ts';

const service = useOAuthService();
let verifier: Awaited<ReturnType<typeof inProcessOAuth>>;
const handle = uniqueHandle('neg');
let jar: CookieJar;

beforeAll(async () => {
  verifier = await inProcessOAuth(service);
  jar = new CookieJar();
});
afterAll(async () => {
  await verifier?.close();
});

let created = false;
/** Signs in once (creating the user), then reuses the browser session. */
const browser = () => {
  const options = { handle, create: !created };
  created = true;
  return options;
};

async function exchange(
  clientId: string,
  code: string,
  codeVerifier: string,
  redirectUri: string,
  extra: Record<string, string> = {},
) {
  return tokenRequest(service, {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: codeVerifier,
    redirect_uri: redirectUri,
    ...extra,
  });
}

async function tokensFor(extra: Record<string, string> = {}, params: Record<string, string> = {}) {
  const { client, redirectUri } = await registerPublicClient(service);
  const { code, verifier: v } = await authorize(service, jar, client, redirectUri, browser(), params);
  const response = await exchange(client.client_id, code, v, redirectUri, extra);
  expect(response.status).toBe(200);
  const body = (await response.json()) as Record<string, string>;
  return { client, redirectUri, body };
}

function refresh(clientId: string, refreshToken: string, extra: Record<string, string> = {}) {
  return tokenRequest(service, {
    grant_type: 'refresh_token',
    client_id: clientId,
    refresh_token: refreshToken,
    ...extra,
  });
}

async function expectOAuthError(response: Response, status: number, error: string) {
  const body = (await response.json()) as Record<string, unknown>;
  expect({ status: response.status, error: body.error }).toEqual({ status, error });
  expect(body.access_token).toBeUndefined();
  expect(body.refresh_token).toBeUndefined();
}

/** Sends the browser to /oauth/authorize and returns where the server sends it back (or its error page). */
async function authorizationOutcome(clientId: string, redirectUri: string, params: Record<string, string>) {
  const url = new URL(`${service.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    state: 'st',
    ...params,
  }).toString();
  const response = await new CookieJar().fetch(url.toString());
  return { status: response.status, location: response.headers.get('location'), body: await response.text() };
}

describe('authorization requests', () => {
  it('refuses a request without PKCE, redirecting invalid_request to the client', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const outcome = await authorizationOutcome(client.client_id, redirectUri, {});
    const back = new URL(outcome.location!);
    expect(back.origin + back.pathname).toBe(redirectUri);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('refuses code_challenge_method=plain', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const outcome = await authorizationOutcome(client.client_id, redirectUri, {
      code_challenge: oauth.generateRandomCodeVerifier(),
      code_challenge_method: 'plain',
    });
    const back = new URL(outcome.location!);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('refuses an unregistered redirect URI without redirecting anywhere', async () => {
    const { client } = await registerPublicClient(service);
    const outcome = await authorizationOutcome(client.client_id, 'https://attacker.example/cb', {
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
    });
    expect(outcome.status).toBe(400);
    expect(outcome.location).toBeNull();
    // Said for the person at the browser (the link may not be genuine), the code kept for the developer.
    expect(outcome.body).toContain('<h1>This app asked to send you somewhere it did not register</h1>');
    expect(outcome.body).toContain('<code>invalid_redirect_uri</code>');
  });

  it('answers the resume of a step that is used up or unknown as a step that is over, not as the app’s fault', async () => {
    const response = await new CookieJar().fetch(`${service.url}/oauth/authorize/no-such-step`);
    expect(response.status).toBe(400);
    const html = await response.text();
    expect(html).toContain('<h1>This step is over</h1>');
    expect(html).toContain('<code>invalid_request</code>');
  });

  it('accepts a loopback redirect URI on another port than registered (RFC 8252)', async () => {
    const { client } = await registerPublicClient(service);
    const otherPort = 'http://127.0.0.1:61999/callback';
    const { code } = await authorize(service, jar, client, otherPort, browser());
    expect(code).toBeTruthy();
  });

  it('returns access_denied to the client when the user denies', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const { runAuthorization } = await import('./helpers.ts');
    const { url } = await authorizationRequest(service, client, redirectUri, { state: 'st' });
    const { callback } = await runAuthorization(service, jar, url, redirectUri, {
      ...browser(),
      decision: 'deny',
    });
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('code')).toBeNull();
  });

  it('refuses a repeated scope parameter (invalid_request) instead of merging or picking one', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const url = new URL(`${service.url}/oauth/authorize`);
    url.search = new URLSearchParams([
      ['response_type', 'code'],
      ['client_id', client.client_id],
      ['redirect_uri', redirectUri],
      ['code_challenge', await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())],
      ['code_challenge_method', 'S256'],
      ['state', 'st'],
      ['scope', 'project:read'],
      ['scope', 'project:write'],
    ]).toString();
    const response = await new CookieJar().fetch(url.toString());
    const back = new URL(response.headers.get('location')!);
    expect(back.origin + back.pathname).toBe(redirectUri);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toContain('scope');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('refuses a NUL in a parameter it would store (invalid_request to the client, nothing stored)', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    // The text `\u0000` (a backslash, not a NUL) is a fine state and is stored as it is.
    for (const [state, error] of [
      ['a\u0000b', 'invalid_request'],
      ['a\\u0000b', null],
    ] as const) {
      const { url } = await authorizationRequest(service, client, redirectUri, { state });
      const response = await new CookieJar().fetch(url);
      expect(response.status, state).toBeLessThan(500);
      const location = response.headers.get('location')!;
      const back = new URL(location, service.url);
      if (error) {
        expect(back.origin + back.pathname).toBe(redirectUri);
        expect(back.searchParams.get('error')).toBe(error);
      } else {
        expect(back.searchParams.get('error'), location).toBeNull();
      }
    }
  });

  it('grants the default read scopes when no scope is sent, and ignores unknown ones', async () => {
    const none = await tokensFor({}, { scope: '' });
    expect(none.body.scope!.split(' ').every((s) => s.endsWith(':read'))).toBe(true);
    expect(none.body.scope).toContain('project:read');
    const unknown = await tokensFor({}, { scope: 'openid profile project:write bogus:thing' });
    expect(unknown.body.scope).toBe('project:write');
  });
});

describe('code exchange', () => {
  it('refuses a wrong verifier, a redirect URI mismatch and an expired code', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const first = await authorize(service, jar, client, redirectUri, browser());
    await expectOAuthError(
      await exchange(client.client_id, first.code, oauth.generateRandomCodeVerifier(), redirectUri),
      400,
      'invalid_grant',
    );
    await expectOAuthError(
      await exchange(client.client_id, first.code, first.verifier, 'http://127.0.0.1:53117/other'),
      400,
      'invalid_grant',
    );
    await expectOAuthError(
      await exchange(client.client_id, first.code, first.verifier, redirectUri, { code_verifier: '' }),
      400,
      'invalid_grant',
    );

    const second = await authorize(service, jar, client, redirectUri, browser());
    await sql(
      service,
      `update oidc_models set payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 5))
       where model = 'AuthorizationCode'`,
    );
    await expectOAuthError(
      await exchange(client.client_id, second.code, second.verifier, redirectUri),
      400,
      'invalid_grant',
    );
  });

  it('refuses a replayed code and revokes the tokens it produced', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const { code, verifier: v } = await authorize(service, jar, client, redirectUri, browser());
    const first = await exchange(client.client_id, code, v, redirectUri);
    expect(first.status).toBe(200);
    const tokens = (await first.json()) as { access_token: string; refresh_token: string };
    expect(await verifier.oauth.verifyAccessToken(tokens.access_token)).not.toBeNull();

    await expectOAuthError(await exchange(client.client_id, code, v, redirectUri), 400, 'invalid_grant');
    expect(await verifier.oauth.verifyAccessToken(tokens.access_token)).toBeNull();
    await expectOAuthError(await refresh(client.client_id, tokens.refresh_token), 400, 'invalid_grant');
  });

  it('refuses a code presented by another client', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const other = await registerPublicClient(service);
    const { code, verifier: v } = await authorize(service, jar, client, redirectUri, browser());
    await expectOAuthError(
      await exchange(other.client.client_id, code, v, redirectUri),
      400,
      'invalid_grant',
    );
  });
});

describe('refresh', () => {
  it('gives parallel refreshes within the grace period one successor, not parallel chains', async () => {
    const { client, body } = await tokensFor();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => refresh(client.client_id, body.refresh_token!)),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    const tokens = (await Promise.all(answers.map((a) => a.json()))) as {
      access_token: string;
      refresh_token: string;
    }[];
    const successors = new Set(tokens.map((t) => t.refresh_token));
    expect(successors.size).toBe(1);
    const [successor] = [...successors];
    expect(successor).not.toBe(body.refresh_token);
    // One live refresh token in the grant besides the rotated original: no fork was stored.
    const live = await sql(
      service,
      `select 1 from oidc_models where model = 'RefreshToken' and consumed_at is null and payload->>'clientId' = $1`,
      [client.client_id],
    );
    expect(live).toHaveLength(1);
    for (const t of tokens) expect(await verifier.oauth.verifyAccessToken(t.access_token)).not.toBeNull();

    // A late retry inside the grace gets the same successor again; the successor itself rotates normally.
    const retry = await refresh(client.client_id, body.refresh_token!);
    expect(((await retry.json()) as { refresh_token: string }).refresh_token).toBe(successor);
    const next = await refresh(client.client_id, successor!);
    expect(next.status).toBe(200);
    const third = (await next.json()) as { access_token: string; refresh_token: string };
    expect(third.refresh_token).not.toBe(successor);

    // After the grace, the original is a replay: every token of the grant dies.
    await pastRotationGrace(service, client.client_id);
    await expectOAuthError(await refresh(client.client_id, body.refresh_token!), 400, 'invalid_grant');
    await expectOAuthError(await refresh(client.client_id, third.refresh_token), 400, 'invalid_grant');
    for (const t of [...tokens, third])
      expect(await verifier.oauth.verifyAccessToken(t.access_token)).toBeNull();
  });

  it('revokes the grant when a rotated refresh token is reused after the grace period', async () => {
    const { client, body } = await tokensFor();
    const rotated = await refresh(client.client_id, body.refresh_token!);
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as { access_token: string; refresh_token: string };

    // Move the rotation an hour into the past: the old token is now a replay.
    await pastRotationGrace(service, client.client_id);
    await expectOAuthError(await refresh(client.client_id, body.refresh_token!), 400, 'invalid_grant');
    // The whole grant is gone: the newer refresh and access tokens die with it.
    await expectOAuthError(await refresh(client.client_id, next.refresh_token), 400, 'invalid_grant');
    expect(await verifier.oauth.verifyAccessToken(next.access_token)).toBeNull();
  });

  it('refuses another client, scope escalation and a foreign resource without burning the token', async () => {
    const { client, body } = await tokensFor({}, { scope: 'project:read' });
    const other = await registerPublicClient(service);
    await expectOAuthError(await refresh(other.client.client_id, body.refresh_token!), 400, 'invalid_grant');
    await expectOAuthError(
      await refresh(client.client_id, body.refresh_token!, { scope: 'project:read project:write' }),
      400,
      'invalid_scope',
    );
    await expectOAuthError(
      await refresh(client.client_id, body.refresh_token!, {
        resource: resourceFor('rest', service.config.baseUrl),
      }),
      400,
      'invalid_target',
    );
    const still = await refresh(client.client_id, body.refresh_token!);
    expect(still.status).toBe(200);
    expect(((await still.json()) as { scope: string }).scope).toBe('project:read');
  });
});

describe('audience', () => {
  it('binds a token without resource to the MCP resource, which the REST API refuses', async () => {
    const { body } = await tokensFor({}, { scope: 'user:read' });
    const caller = await verifier.oauth.verifyAccessToken(body.access_token!);
    expect(caller?.credential).toMatchObject({ audience: resourceFor('mcp', service.config.baseUrl) });
    const api = await fetch(`${service.url}/api/v1/user`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(api.status).toBe(401);
  });

  it('takes a resource indicator with a trailing slash as the same resource, at every step', async () => {
    const mcp = resourceFor('mcp', service.config.baseUrl);
    // Each spelling at authorization, code exchange and refresh, in every mix the helper of a client
    // configured with one URL and a library that adds or drops the slash can produce.
    for (const [authorized, exchanged, refreshed] of [
      [`${mcp}/`, mcp, `${mcp}/`],
      [mcp, `${mcp}/`, mcp],
      [undefined, `${mcp}/`, `${mcp}/`],
    ] as const) {
      const { client, body } = await tokensFor(
        { resource: exchanged },
        { scope: 'user:read', ...(authorized ? { resource: authorized } : {}) },
      );
      const caller = await verifier.oauth.verifyAccessToken(body.access_token!);
      expect(caller?.credential).toMatchObject({ audience: mcp });
      const again = await refresh(client.client_id, body.refresh_token!, { resource: refreshed });
      expect(again.status, `${authorized} ${exchanged} ${refreshed}`).toBe(200);
    }
  });

  it('refuses a token request naming two resources, which one token cannot serve, and serves each alone', async () => {
    const api = resourceFor('rest', service.config.baseUrl);
    const mcp = resourceFor('mcp', service.config.baseUrl);
    const { client, redirectUri } = await registerPublicClient(service);
    const { runAuthorization } = await import('./helpers.ts');
    const form = (fields: [string, string][]) =>
      fetch(`${service.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      });
    /** A code of an authorization for both resources (its grant holds both), as exchange fields. */
    const authorizedForBoth = async (): Promise<[string, string][]> => {
      const codeVerifier = oauth.generateRandomCodeVerifier();
      const url = new URL(`${service.url}/oauth/authorize`);
      url.search = new URLSearchParams([
        ['response_type', 'code'],
        ['client_id', client.client_id],
        ['redirect_uri', redirectUri],
        ['code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier)],
        ['code_challenge_method', 'S256'],
        ['scope', 'user:read'],
        ['resource', mcp],
        ['resource', api],
      ]).toString();
      const { callback } = await runAuthorization(service, jar, url.toString(), redirectUri, browser());
      return [
        ['grant_type', 'authorization_code'],
        ['client_id', client.client_id],
        ['code', callback.searchParams.get('code')!],
        ['code_verifier', codeVerifier],
        ['redirect_uri', redirectUri],
      ];
    };
    // Both at once: invalid_target, where a token for /mcp alone came back, unsaid.
    await expectOAuthError(
      await form([...(await authorizedForBoth()), ['resource', api], ['resource', mcp]]),
      400,
      'invalid_target',
    );
    // One of them: a token for that one.
    const single = await form([...(await authorizedForBoth()), ['resource', api]]);
    expect(single.status).toBe(200);
    const tokens = (await single.json()) as Record<string, string>;
    expect((await verifier.oauth.verifyAccessToken(tokens.access_token!))?.credential).toMatchObject({
      audience: api,
    });
    // A refresh naming both is refused the same way; naming none gets the grant's default, as before.
    await expectOAuthError(
      await form([
        ['grant_type', 'refresh_token'],
        ['client_id', client.client_id],
        ['refresh_token', tokens.refresh_token!],
        ['resource', api],
        ['resource', mcp],
      ]),
      400,
      'invalid_target',
    );
    expect((await refresh(client.client_id, tokens.refresh_token!)).status).toBe(200);
  });

  it('refuses a resource indicator that is not ours', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const outcome = await authorizationOutcome(client.client_id, redirectUri, {
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
      resource: 'https://elsewhere.example/api',
    });
    expect(new URL(outcome.location!).searchParams.get('error')).toBe('invalid_target');
  });
});

describe('introspection', () => {
  it('answers active:false to a client the token was not issued to', async () => {
    const { client, body } = await tokensFor();
    const other = await registerPublicClient(service);
    const introspect = (clientId: string) =>
      fetch(`${service.url}/oauth/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: clientId, token: body.access_token! }).toString(),
      }).then((r) => r.json() as Promise<Record<string, unknown>>);
    expect((await introspect(client.client_id)).active).toBe(true);
    expect(await introspect(other.client.client_id)).toEqual({ active: false });
  });
});
