// Verified bearer tokens are reused from memory (src/authz/authenticator.ts), and that must never let a
// revoked token, a disconnected app or a removed role through: not on the instance that made the change, and
// not on another instance that had the token in its cache. Two instances run on one database here; each test
// warms both caches with a good request, changes something on one instance (or behind both, in SQL), and
// asks both at once afterwards, with no waiting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { resourceFor } from '../../src/oauth/index.ts';
import { jsonRpcOf, postMcp, postModern } from '../mcp/helpers.ts';
import { CookieJar, connectPublicClient, sql, startOAuthService, uniqueHandle } from '../oauth/helpers.ts';
import { createTestOrganization, createTestUser, sdkClient, type TestUser } from '../support/fixtures.ts';
import type { TestService } from '../support/service.ts';

let a: TestService;
let b: TestService;
let uncached: TestService;

// Every refused request here is one failed authentication from the same address; the limiter is not the subject.
const failedAuthLimit = { RATE_LIMIT_FAILED_AUTH_PER_MINUTE: '100000' };

beforeAll(async () => {
  a = await startOAuthService(failedAuthLimit);
  // Same database, same public origin (so OAuth tokens carry an audience both accept), own process state.
  const sameService = { ...failedAuthLimit, BASE_URL: a.config.baseUrl };
  b = await startOAuthService(sameService, { database: a.database });
  uncached = await startOAuthService({ ...sameService, AUTH_CACHE_SECONDS: '0' }, { database: a.database });
}, 60_000);
afterAll(async () => {
  await uncached?.stop();
  await b?.stop();
  await a?.close();
});

const instances = () => ({ a, b });

/** An instance's own address (its `url` is the shared public origin, which is instance A's). */
const at = (service: TestService) => ({ url: `http://127.0.0.1:${service.port}` });

async function projectsStatus(service: TestService, bearer: string, account: string) {
  const { response } = await sdk.listProjects({ client: sdkClient(at(service), bearer), path: { account } });
  return response.status;
}

/** The status of a list_projects tool call at /mcp (401 at the HTTP level for a dead token), per revision. */
async function mcpStatus(
  service: TestService,
  bearer: string,
  account: string,
  revision: 'legacy' | 'modern',
  via: 'direct' | 'sdk' = 'direct',
  extraArguments: Record<string, unknown> = {},
) {
  // A progress token is something the direct path leaves to the SDK (src/mcp/direct-call.ts).
  const meta = via === 'sdk' ? { _meta: { progressToken: 1 } } : {};
  const call = {
    method: 'tools/call',
    params: { name: 'list_projects', arguments: { account, ...extraArguments }, ...meta },
  };
  const headers = { authorization: `Bearer ${bearer}` };
  const response =
    revision === 'modern'
      ? await postModern(at(service), call, headers)
      : await postMcp(at(service), { jsonrpc: '2.0', id: 1, ...call }, headers);
  await response.body?.cancel();
  return response.status;
}

/** Both instances answer `status` for the bearer, over REST and MCP. */
async function expectEverywhere(bearer: string, account: string, status: number, mcp = true) {
  for (const [name, service] of Object.entries(instances())) {
    expect(await projectsStatus(service, bearer, account), `REST on ${name}`).toBe(status);
    if (!mcp) continue;
    // A 2025-era answer streams; a 2026-07-28 one is JSON made once the call is done (src/mcp/http.ts).
    for (const revision of ['legacy', 'modern'] as const) {
      expect(await mcpStatus(service, bearer, account, revision), `MCP (${revision}) on ${name}`).toBe(
        status === 404 ? 200 : status,
      );
    }
  }
}

async function newUser(prefix: string): Promise<TestUser> {
  return createTestUser(a, uniqueHandle(prefix));
}

async function tokenIdOf(user: TestUser): Promise<string> {
  const [row] = (await sql(a, 'select id from account_tokens where created_by_id = $1', [user.userId])) as {
    id: string;
  }[];
  return row!.id;
}

describe('the verified-caller cache', () => {
  it('is in use: a warm token is not looked up again (its last-used time is not rewritten), unless the cache is off', async () => {
    const user = await newUser('warm');
    expect(await projectsStatus(a, user.token, user.handle)).toBe(200);
    expect(await projectsStatus(uncached, user.token, user.handle)).toBe(200);
    // Clearing last_used_at changes nothing a bearer check depends on, so it moves no credential epoch.
    await sql(a, 'update account_tokens set last_used_at = null where created_by_id = $1', [user.userId]);
    expect(await projectsStatus(a, user.token, user.handle)).toBe(200);
    const [afterCached] = (await sql(a, 'select last_used_at from account_tokens where created_by_id = $1', [
      user.userId,
    ])) as { last_used_at: Date | null }[];
    expect(afterCached!.last_used_at).toBeNull();
    expect(await projectsStatus(uncached, user.token, user.handle)).toBe(200);
    const [afterLookup] = (await sql(a, 'select last_used_at from account_tokens where created_by_id = $1', [
      user.userId,
    ])) as { last_used_at: Date | null }[];
    expect(afterLookup!.last_used_at).toBeInstanceOf(Date);
  });

  it('never serves an account token revoked through the API on another instance, or on this one', async () => {
    for (const revokeOn of ['a', 'b'] as const) {
      const user = await newUser(`rev${revokeOn}`);
      await expectEverywhere(user.token, user.handle, 200);
      const revoked = await sdk.revokeToken({
        client: sdkClient(at(instances()[revokeOn]), user.token),
        path: { account: user.handle, token: await tokenIdOf(user) },
      });
      expect(revoked.response.status).toBe(204);
      await expectEverywhere(user.token, user.handle, 401);
      // Operations that name no account are refused too (the cache is confirmed before them).
      const profile = await sdk.getCurrentUser({ client: sdkClient(at(b), user.token) });
      expect(profile.response.status).toBe(401);
    }
  });

  it('never serves a token revoked, expired or deleted behind the service, in SQL', async () => {
    const revokedUser = await newUser('sqlrev');
    const expiredUser = await newUser('sqlexp');
    const deletedUser = await newUser('sqldel');
    for (const user of [revokedUser, expiredUser, deletedUser])
      await expectEverywhere(user.token, user.handle, 200);
    await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [
      revokedUser.userId,
    ]);
    await sql(
      a,
      `update account_tokens set expires_at = now() - interval '1 second' where created_by_id = $1`,
      [expiredUser.userId],
    );
    await sql(a, 'delete from account_tokens where created_by_id = $1', [deletedUser.userId]);
    for (const user of [revokedUser, expiredUser, deletedUser])
      await expectEverywhere(user.token, user.handle, 401);
  });

  it('answers a tool call with a revoked token by the 401 challenge when MCP is the first door to see it', async () => {
    // The pipeline confirms a cached caller of a tool call; the HTTP layer must still answer 401 (not a tool
    // result), for a streamed 2025-era answer and for a 2026-07-28 JSON one alike, whether the call is
    // answered directly or through the SDK.
    for (const via of ['direct', 'sdk'] as const) {
      for (const revision of ['legacy', 'modern'] as const) {
        const user = await newUser(`mcp${revision}${via}`);
        for (const service of [a, b])
          expect(await mcpStatus(service, user.token, user.handle, revision, via)).toBe(200);
        await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [user.userId]);
        for (const service of [a, b]) {
          expect(await mcpStatus(service, user.token, user.handle, revision, via), `${revision} ${via}`).toBe(
            401,
          );
        }
      }
    }
  });

  it('answers a tool call with a revoked token by the 401 challenge when its arguments are refused too', async () => {
    // Arguments the tool refuses (one it does not have, one of the wrong type) are answered before the
    // pipeline, which confirms a cached caller, would run: the refusal must not tell a revoked token more
    // than 401, as REST does not.
    const wrongArguments = [{ bogus: 1 }, { limit: 'ten' }];
    for (const via of ['direct', 'sdk'] as const) {
      for (const revision of ['legacy', 'modern'] as const) {
        const user = await newUser(`mcpargs${revision}${via}`);
        for (const service of [a, b]) {
          expect(await mcpStatus(service, user.token, user.handle, revision, via)).toBe(200);
          for (const extra of wrongArguments)
            expect(await mcpStatus(service, user.token, user.handle, revision, via, extra)).toBe(200);
        }
        await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [user.userId]);
        for (const service of [a, b]) {
          for (const extra of wrongArguments) {
            expect(
              await mcpStatus(service, user.token, user.handle, revision, via, extra),
              `${revision} ${via} ${JSON.stringify(extra)}`,
            ).toBe(401);
          }
        }
      }
    }
  });

  it('answers a malformed tool call with a revoked token by the 401 challenge, not invalid params', async () => {
    // The SDK refuses such a call (arguments that are not an object) before any tool runs: a cached caller
    // must be confirmed before that, or the revoked token hears what is wrong with its request.
    const user = await newUser('mcpmalformed');
    const malformed = (service: TestService) =>
      postMcp(
        at(service),
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_projects', arguments: [1] } },
        { authorization: `Bearer ${user.token}` },
      );
    for (const service of [a, b]) {
      expect(await mcpStatus(service, user.token, user.handle, 'legacy')).toBe(200); // cached
      const before = await malformed(service);
      expect((await jsonRpcOf(before)).error.code).toBe(-32602);
    }
    await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [user.userId]);
    for (const service of [a, b]) {
      const after = await malformed(service);
      expect(after.status).toBe(401);
      await after.body?.cancel();
    }
  });

  it('answers a request refused before any tool runs with a revoked token by the 401 challenge', async () => {
    // Not POST, a body that is not JSON or not a message, arguments nested too deep: each is refused at
    // the HTTP layer, and a revoked token must not hear more than 401 about it either.
    const user = await newUser('mcprefused');
    const deep = (level: number): unknown => (level === 0 ? 'x' : [deep(level - 1)]);
    const raw = (service: TestService, method: string, body?: string) =>
      fetch(`${at(service).url}/mcp`, {
        method,
        headers: {
          authorization: `Bearer ${user.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        ...(body === undefined ? {} : { body }),
      });
    const requests: [string, (service: TestService) => Promise<Response>, number][] = [
      ['GET', (service) => raw(service, 'GET'), 405],
      ['DELETE', (service) => raw(service, 'DELETE'), 405],
      ['not JSON', (service) => raw(service, 'POST', '{"jsonrpc":'), 400],
      ['not a message', (service) => raw(service, 'POST', '5'), 400],
      [
        'too deep',
        (service) =>
          postMcp(
            at(service),
            {
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name: 'list_projects', arguments: { account: user.handle, cursor: deep(70) } },
            },
            { authorization: `Bearer ${user.token}` },
          ),
        200,
      ],
    ];
    for (const service of [a, b]) {
      expect(await mcpStatus(service, user.token, user.handle, 'legacy')).toBe(200); // cached
      for (const [what, send, status] of requests) {
        const before = await send(service);
        expect(before.status, what).toBe(status);
        await before.body?.cancel();
      }
    }
    await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [user.userId]);
    for (const service of [a, b]) {
      for (const [what, send] of requests) {
        const after = await send(service);
        expect(after.status, what).toBe(401);
        expect(after.headers.get('www-authenticate'), what).toContain('invalid_token');
        await after.body?.cancel();
      }
    }
  });

  it('never serves a token revoked after the database went back to an earlier point (restore, failover)', async () => {
    const user = await newUser('restore');
    const other = await newUser('restoreother');
    const epoch = async () =>
      ((await sql(a, 'select value::text as v from credential_epoch')) as { v: string }[])[0]!.v;
    const before = await epoch();
    // A credential change, then the token verified (and cached) at the epoch it brought.
    await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [other.userId]);
    await expectEverywhere(user.token, user.handle, 200, false);
    // The database is restored to the point before that change (or fails over to a replica that had not
    // received it): the epoch is what it was then. The instances keep running.
    await sql(a, 'update credential_epoch set value = $1', [before]);
    // After it, the token is revoked: one change, as there was one on the lost timeline.
    await sql(a, 'update account_tokens set revoked_at = now() where created_by_id = $1', [user.userId]);
    await expectEverywhere(user.token, user.handle, 401, false);
  });

  it('does not reuse a verification past the moment the token expires', async () => {
    const user = await newUser('soon');
    await sql(
      a,
      `update account_tokens set expires_at = now() + interval '1.5 seconds' where created_by_id = $1`,
      [user.userId],
    );
    await expectEverywhere(user.token, user.handle, 200, false);
    // Nothing in the database changes from here on: only the clock.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await expectEverywhere(user.token, user.handle, 401, false);
  });

  it('never keeps a removed or lowered organization role', async () => {
    const admin = await newUser('orgadm');
    const member = await newUser('orgmem');
    const org = uniqueHandle('cacheorg');
    await createTestOrganization(a, org, admin, { members: [member] });
    await expectEverywhere(member.token, org, 200);
    // Admin rights of the admin, warm on both instances: update the organization.
    for (const service of [a, b]) {
      const updated = await sdk.updateOrganization({
        client: sdkClient(at(service), admin.token),
        path: { org },
        body: { displayName: `Cache ${service === a ? 'A' : 'B'}` },
      });
      expect(updated.response.status).toBe(200);
    }
    // A second admin lowers the first to member on instance A; B refuses the admin operation at once.
    const [membership] = (await sql(
      a,
      `select m.id from memberships m join organizations o on o.id = m.organization_id
        join accounts ac on ac.id = o.account_id where ac.handle = $1 and m.user_id = $2`,
      [org, member.userId],
    )) as { id: string }[];
    await sql(a, `update memberships set role = 'admin' where id = $1`, [membership!.id]);
    const lowered = await sdk.updateMember({
      client: sdkClient(at(a), member.token),
      path: { org, user: admin.handle },
      body: { role: 'member' },
    });
    expect(lowered.response.status, JSON.stringify(lowered.error)).toBe(200);
    const refused = await sdk.updateOrganization({
      client: sdkClient(at(b), admin.token),
      path: { org },
      body: { displayName: 'No longer mine' },
    });
    expect(refused.response.status).toBe(403);
    // Then the (new) admin removes the old one on B; A no longer shows them the organization at all.
    const removed = await sdk.removeMember({
      client: sdkClient(at(b), member.token),
      path: { org, user: admin.handle },
    });
    expect(removed.response.status, JSON.stringify(removed.error)).toBe(204);
    await expectEverywhere(admin.token, org, 404);
  });

  it('never serves an OAuth access token revoked at /oauth/revoke, or of an app disconnected, on either instance', async () => {
    const connect = async (handle: string, create: boolean, jar: CookieJar) => {
      const { client, tokens } = await connectPublicClient(
        a,
        jar,
        { handle, create },
        { scope: 'project:read token:write apps:write', resource: resourceFor('rest', a.config.baseUrl) },
      );
      return { clientId: client.client_id, accessToken: tokens.access_token };
    };
    const handle = uniqueHandle('oauthc');
    const jar = new CookieJar();

    const revokedApp = await connect(handle, true, jar);
    await expectEverywhere(revokedApp.accessToken, handle, 200, false);
    const revocation = await fetch(`${at(b).url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: revokedApp.accessToken, client_id: revokedApp.clientId }).toString(),
    });
    expect(revocation.status).toBe(200);
    await expectEverywhere(revokedApp.accessToken, handle, 401, false);

    // An app's access token and an account token the app created, both warm; then the person disconnects it.
    const app = await connect(handle, false, jar);
    const minted = await sdk.createToken({
      client: sdkClient(at(a), app.accessToken),
      path: { account: handle },
      body: { name: 'made by the app', scopes: ['project:read'] },
    });
    expect(minted.response.status, JSON.stringify(minted.error)).toBe(201);
    const childToken = minted.data!.token;
    await expectEverywhere(app.accessToken, handle, 200, false);
    await expectEverywhere(childToken, handle, 200);
    const disconnected = await sdk.disconnectApp({
      client: sdkClient(at(a), app.accessToken),
      path: { clientId: app.clientId },
    });
    expect(disconnected.response.status, JSON.stringify(disconnected.error)).toBe(204);
    await expectEverywhere(app.accessToken, handle, 401, false);
    await expectEverywhere(childToken, handle, 401);
  });
});
