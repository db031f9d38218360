// The refresh grant is one read and one write statement (src/oauth/adapter.ts, refresh-grace.ts): these hold
// what that must not cost. Parallel refreshes on two instances converge on one successor and keep the grant,
// reuse after the grace still revokes it, a rotation that fails half-way stores nothing, and the rows read
// ahead with the client (the token, its grant, its user) still decide as their own look-ups did.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';
import {
  authorize,
  CookieJar,
  inProcessOAuth,
  register,
  registerPublicClient,
  sql,
  startOAuthService,
  tokenRequest,
  uniqueHandle,
} from './helpers.ts';

const service = useService(() => startOAuthService());
let second: TestService;
let verifier: Awaited<ReturnType<typeof inProcessOAuth>>;

beforeAll(async () => {
  // Another instance on the same database and public origin, with its own process state.
  second = await startOAuthService({ BASE_URL: service.config.baseUrl }, { database: service.database });
  verifier = await inProcessOAuth(service);
}, 60_000);
afterAll(async () => {
  await verifier?.close();
  await second?.stop();
});

type Tokens = { access_token: string; refresh_token: string };

async function tokensFor(client: { client_id: string; client_secret?: unknown }, redirectUri: string) {
  const jar = new CookieJar();
  const { code, verifier: v } = await authorize(service, jar, client, redirectUri, {
    handle: uniqueHandle('rot'),
    create: true,
  });
  const response = await tokenRequest(service, {
    grant_type: 'authorization_code',
    client_id: client.client_id,
    code,
    code_verifier: v,
    redirect_uri: redirectUri,
    ...(client.client_secret ? { client_secret: String(client.client_secret) } : {}),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Tokens;
}

function refresh(
  on: { url: string },
  clientId: string,
  refreshToken: string,
  extra: Record<string, string> = {},
) {
  return tokenRequest({ url: on.url } as TestService, {
    grant_type: 'refresh_token',
    client_id: clientId,
    refresh_token: refreshToken,
    ...extra,
  });
}

const secondUrl = () => ({ url: `http://127.0.0.1:${second.port}` });

async function epoch(): Promise<string> {
  const rows = (await sql(service, 'select value::text as v from credential_epoch')) as { v: string }[];
  return rows[0]!.v;
}

async function refreshRows(clientId: string) {
  return (await refreshPayloads(clientId)).map(({ consumed_at, successor_encrypted }) => ({
    consumed: consumed_at !== null,
    has_successor: successor_encrypted !== null,
  }));
}

/** The refresh tokens' stored rows, oldest first: payload, consumption and encrypted successor. */
async function refreshPayloads(clientId: string) {
  return (await sql(
    service,
    `select payload, consumed_at, successor_encrypted from oidc_models
     where model = 'RefreshToken' and payload->>'clientId' = $1 order by created_at`,
    [clientId],
  )) as { payload: Record<string, unknown>; consumed_at: Date | null; successor_encrypted: string | null }[];
}

async function expectInvalidGrant(response: Response) {
  const body = (await response.json()) as Record<string, unknown>;
  expect({ status: response.status, error: body.error }).toEqual({ status: 400, error: 'invalid_grant' });
  expect(body.refresh_token).toBeUndefined();
}

describe('refresh token rotation', () => {
  it('gives parallel refreshes on two instances one successor, keeps the grant and moves no credential epoch', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const first = await tokensFor(client, redirectUri);
    const before = await epoch();
    const [original] = await refreshPayloads(client.client_id);

    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        refresh(i % 2 ? secondUrl() : service, client.client_id, first.refresh_token),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const tokens = (await Promise.all(answers.map((a) => a.json()))) as Tokens[];
    expect(new Set(tokens.map((t) => t.refresh_token)).size).toBe(1);
    expect(new Set(tokens.map((t) => t.access_token)).size).toBe(6);
    // The rotated original carries its successor; the one live refresh token is that successor.
    expect(await refreshRows(client.client_id)).toEqual([
      { consumed: true, has_successor: true },
      { consumed: false, has_successor: false },
    ]);
    // The rotation wrote the successor beside the payload, encrypted, and left the payload as it was stored.
    const [rotated] = await refreshPayloads(client.client_id);
    expect(rotated!.payload).toEqual(original!.payload);
    expect(rotated!.successor_encrypted).not.toContain(tokens[0]!.refresh_token);
    for (const t of tokens) expect(await verifier.oauth.verifyAccessToken(t.access_token)).not.toBeNull();
    expect(await epoch()).toBe(before);

    // After the grace the original is a replay: the grant and all its tokens go, and the epoch moves.
    await sql(
      service,
      `update oidc_models set consumed_at = consumed_at - interval '1 hour'
       where model = 'RefreshToken' and consumed_at is not null and payload->>'clientId' = $1`,
      [client.client_id],
    );
    await expectInvalidGrant(await refresh(secondUrl(), client.client_id, first.refresh_token));
    expect(await epoch()).not.toBe(before);
    await expectInvalidGrant(await refresh(service, client.client_id, tokens[0]!.refresh_token));
    for (const t of tokens) expect(await verifier.oauth.verifyAccessToken(t.access_token)).toBeNull();
    expect(await refreshRows(client.client_id)).toEqual([]);
  });

  it('hands out the successor an earlier release kept in the payload of a token it rotated', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const first = await tokensFor(client, redirectUri);
    const rotated = await refresh(service, client.client_id, first.refresh_token);
    expect(rotated.status).toBe(200);
    const { refresh_token: successor } = (await rotated.json()) as Tokens;
    // The row as the earlier release left it: the successor a member of the payload, no column.
    await sql(
      service,
      `update oidc_models set payload = payload || jsonb_build_object('successor_encrypted', successor_encrypted),
         successor_encrypted = null
       where model = 'RefreshToken' and consumed_at is not null and payload->>'clientId' = $1`,
      [client.client_id],
    );
    expect((await refreshPayloads(client.client_id)).map((row) => row.successor_encrypted)).toEqual([
      null,
      null,
    ]);

    // A retry within the grace period gets that successor, on either instance, and it rotates normally.
    for (const on of [service, secondUrl()]) {
      const retry = await refresh(on, client.client_id, first.refresh_token);
      expect(retry.status).toBe(200);
      expect(((await retry.json()) as Tokens).refresh_token).toBe(successor);
    }
    const next = await refresh(secondUrl(), client.client_id, successor);
    expect(next.status).toBe(200);
    expect(((await next.json()) as Tokens).refresh_token).not.toBe(successor);
  });

  it('stores nothing when a rotation fails before its access token is stored, and the token still works', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const first = await tokensFor(client, redirectUri);
    const accessTokens = async () =>
      (
        (await sql(
          service,
          `select count(*)::int as n from oidc_models where model = 'AccessToken' and payload->>'clientId' = $1`,
          [client.client_id],
        )) as { n: number }[]
      )[0]!.n;
    const issued = await accessTokens();

    // The access token's insert fails for this client only (the client id is base64url: safe to inline).
    await sql(
      service,
      `create function fail_access_token() returns trigger language plpgsql as $$
       begin
         if new.model = 'AccessToken' and new.payload->>'clientId' = '${client.client_id}' then
           raise exception 'injected failure';
         end if;
         return new;
       end $$;
       create trigger fail_access_token before insert on oidc_models
         for each row execute function fail_access_token();`,
    );
    try {
      const failed = await refresh(service, client.client_id, first.refresh_token);
      expect(failed.status).toBe(500);
      expect(await refreshRows(client.client_id)).toEqual([{ consumed: false, has_successor: false }]);
      expect(await accessTokens()).toBe(issued);
    } finally {
      await sql(service, 'drop trigger fail_access_token on oidc_models; drop function fail_access_token()');
    }

    const retried = await refresh(secondUrl(), client.client_id, first.refresh_token);
    expect(retried.status).toBe(200);
    const next = (await retried.json()) as Tokens;
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(await verifier.oauth.verifyAccessToken(next.access_token)).not.toBeNull();
  });

  it('authenticates a confidential client with its encrypted secret, and a wrong secret burns nothing', async () => {
    const redirectUri = 'http://127.0.0.1:53119/callback';
    const registered = await register(service, {
      client_name: 'Confidential rotation',
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'client_secret_post',
    });
    expect(registered.status).toBe(201);
    const client = (await registered.json()) as { client_id: string; client_secret: string };
    const first = await tokensFor(client, redirectUri);

    const wrong = await refresh(service, client.client_id, first.refresh_token, { client_secret: 'not-it' });
    expect(wrong.status).toBe(401);
    expect(await refreshRows(client.client_id)).toEqual([{ consumed: false, has_successor: false }]);

    const right = await refresh(secondUrl(), client.client_id, first.refresh_token, {
      client_secret: client.client_secret,
    });
    expect(right.status).toBe(200);
  });

  it('refuses an expired refresh token, one of another client, one whose grant or user is gone', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const other = await registerPublicClient(service);

    const expired = await tokensFor(client, redirectUri);
    await sql(
      service,
      `update oidc_models set payload = jsonb_set(payload, '{exp}', to_jsonb(extract(epoch from now())::int - 5))
       where model = 'RefreshToken' and payload->>'clientId' = $1`,
      [client.client_id],
    );
    await expectInvalidGrant(await refresh(service, client.client_id, expired.refresh_token));

    const live = await tokensFor(client, redirectUri);
    await expectInvalidGrant(await refresh(service, other.client.client_id, live.refresh_token));

    const orphan = await tokensFor(client, redirectUri);
    const orphanCaller = await verifier.oauth.verifyAccessToken(orphan.access_token);
    await sql(service, `delete from oidc_models where model = 'Grant' and id = $1`, [
      orphanCaller!.oauthGrantId,
    ]);
    await expectInvalidGrant(await refresh(service, client.client_id, orphan.refresh_token));

    const caller = await verifier.oauth.verifyAccessToken(live.access_token);
    await sql(service, 'delete from users where id = $1', [caller!.userId]);
    await expectInvalidGrant(await refresh(service, client.client_id, live.refresh_token));
  });
});
