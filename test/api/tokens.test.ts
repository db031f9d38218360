import type { EntityManager } from '@mikro-orm/postgresql';
import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import type { Scope } from '../../src/authz/scopes.ts';
import { Account, Membership, User } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { createOrganization } from '../../src/domain/organizations.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import { uuidv7 } from '../../src/lib/ids.ts';
import { burstFromAnotherProcess } from '../support/burst.ts';
import { createTestUser, sdkClient, type TestUser } from '../support/fixtures.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');

/** Runs `work` on the service's database, outside the API: for setup the API does not offer here. */
async function withDatabase<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
  const orm = await openDatabase(service.database.url);
  try {
    const em = orm.em.fork();
    const result = await work(em);
    await em.flush();
    return result;
  } finally {
    await orm.close();
  }
}

beforeAll(async () => {
  // acme: ada is its admin (as its creator), bob a member.
  await withDatabase(async (em) => {
    const { organization } = createOrganization(em, await em.findOneOrFail(User, ada.userId), {
      handle: 'acme',
      displayName: 'Acme',
    });
    em.create(Membership, { organization, user: bob.userId, role: 'member' });
  });
});

const create = (user: TestUser, account: string, scopes: Scope[], extra: Record<string, unknown> = {}) =>
  sdk.createToken({
    client: user.client,
    path: { account },
    body: { name: 'made by test', scopes, ...extra },
  });

async function tokenNames(user: TestUser, account: string): Promise<string[]> {
  const list = await sdk.listTokens({ client: user.client, path: { account }, query: { limit: 100 } });
  expect(list.response.status).toBe(200);
  return list.data!.items.map((t) => t.name);
}

describe('account tokens through the generated SDK', () => {
  it('creates a token whose secret is shown once, authenticates with it, and records its use', async () => {
    const before = Date.now();
    const created = await create(ada, 'ada', ['project:read', 'account:read'], {
      name: 'ci',
      description: 'reads projects',
    });
    expect(created.response.status).toBe(201);
    // Shown once: no cache may keep the answer.
    expect(created.response.headers.get('cache-control')).toBe('no-store');
    const token = created.data!;
    expect(token.token).toMatch(/^l10n_[0-9A-Za-z]{38}$/);
    expect(token).toMatchObject({
      account: 'ada',
      name: 'ci',
      description: 'reads projects',
      scopes: ['account:read', 'project:read'],
      status: 'active',
      lastUsedAt: null,
      revokedAt: null,
      createdBy: 'ada',
      tokenPrefix: token.token.slice(0, 12),
    });
    // Default lifetime: 90 days from creation.
    const expires = Date.parse(token.expiresAt!);
    expect(expires).toBeGreaterThanOrEqual(before + 90 * 86_400_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 90 * 86_400_000);

    const withToken = sdkClient(service, token.token);
    const projects = await sdk.listProjects({ client: withToken, path: { account: 'ada' } });
    expect(projects.response.status).toBe(200);
    // Only the scopes it carries: no project:write.
    const write = await sdk.createProject({
      client: withToken,
      path: { account: 'ada' },
      body: { handle: 'nope', name: 'n', sourceLocale: 'en' },
    });
    expect(write.response.status).toBe(403);

    const list = await sdk.listTokens({ client: ada.client, path: { account: 'ada' } });
    const listed = list.data!.items.find((t) => t.id === token.id)!;
    expect(listed.lastUsedAt).not.toBeNull();
    // The list reads plain rows, the create answers from the entity: the same representation, field for
    // field (timestamps to the millisecond, the creator's handle), but for the secret and the use since.
    const { token: _secret, ...shown } = token;
    expect(listed).toEqual({ ...shown, lastUsedAt: listed.lastUsedAt });
    expect(listed).not.toHaveProperty('token');
    const text = JSON.stringify(list.data);
    expect(text).not.toContain(token.token);
    expect(text).not.toMatch(/tokenHash|token_hash/);
  });

  it('takes expiresInDays and rejects invalid input on create with 400, storing nothing', async () => {
    const short = await create(ada, 'ada', ['project:read'], { name: 'one-day', expiresInDays: 1 });
    expect(short.response.status).toBe(201);
    expect(Date.parse(short.data!.expiresAt!)).toBeLessThanOrEqual(Date.now() + 86_400_000);

    const before = await tokenNames(ada, 'ada');
    const invalid: [Record<string, unknown>, string][] = [
      [{ name: 'x', scopes: [] }, '/body/scopes'],
      [{ name: 'x', scopes: ['project:fly'] }, '/body/scopes/0'],
      [{ name: 'x', scopes: ['project:read', 'project:read'] }, '/body/scopes'],
      [{ name: '', scopes: ['project:read'] }, '/body/name'],
      [{ name: 'x', scopes: ['project:read'], expiresInDays: 0 }, '/body/expiresInDays'],
      [{ name: 'x', scopes: ['project:read'], expiresInDays: 367 }, '/body/expiresInDays'],
      [{ name: 'x', scopes: ['project:read'], expiresAt: '2030-01-01T00:00:00Z' }, '/body/expiresAt'],
    ];
    for (const [body, pointer] of invalid) {
      const r = await sdk.createToken({ client: ada.client, path: { account: 'ada' }, body: body as never });
      expect(r.response.status, JSON.stringify(body)).toBe(400);
      expect((r.error as { errors: { pointer: string }[] }).errors.map((e) => e.pointer)).toContain(pointer);
    }
    expect(await tokenNames(ada, 'ada')).toEqual(before);
  });

  it('refuses scopes beyond the creator’s own token, listing them', async () => {
    const carol = await createTestUser(service, 'carol', ['project:read', 'token:write', 'token:read']);
    const escalate = await create(carol, 'carol', ['project:read', 'project:write']);
    expect(escalate.response.status).toBe(403);
    const problem = escalate.error as { detail: string; errors: { pointer: string; message: string }[] };
    expect(problem.errors).toHaveLength(1);
    expect(problem.errors[0]!.pointer).toBe('/body/scopes');
    expect(problem.errors[0]!.message).toContain('project:write');
    expect(problem.detail).toContain('project:write');
    expect(await tokenNames(carol, 'carol')).toEqual(['test']);

    const within = await create(carol, 'carol', ['project:read']);
    expect(within.response.status).toBe(201);
  });

  it('refuses scopes beyond the creator’s roles: members cannot mint organization:delete', async () => {
    // bob is only a member of acme: he may not create tokens for it at all…
    const onOrg = await create(bob, 'acme', ['organization:delete']);
    expect(onOrg.response.status).toBe(403);
    // …and his personal token (which acts wherever he may act) cannot carry what no role of his allows.
    const personal = await create(bob, 'bob', ['organization:delete', 'members:write', 'project:read']);
    expect(personal.response.status).toBe(403);
    const problem = personal.error as { errors: { pointer: string; message: string }[] };
    expect(problem.errors.map((e) => e.message.split(' ')[0]).sort()).toEqual([
      'members:write',
      'organization:delete',
    ]);
    expect(await tokenNames(bob, 'bob')).toEqual(['test']);

    // ada administers acme, so her personal token may carry it.
    const admin = await create(ada, 'ada', ['organization:delete']);
    expect(admin.response.status).toBe(201);
  });

  it('creates organization tokens within the admin’s role there, acting on that organization only', async () => {
    const tooMuch = await create(ada, 'acme', ['project:read', 'user:write']);
    expect(tooMuch.response.status).toBe(403);
    expect((tooMuch.error as { detail: string }).detail).toContain('user:write');

    const created = await create(ada, 'acme', ['project:read', 'project:write'], { name: 'acme-ci' });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ account: 'acme', createdBy: 'ada' });
    const orgClient = sdkClient(service, created.data!.token);
    expect((await sdk.listProjects({ client: orgClient, path: { account: 'acme' } })).response.status).toBe(
      200,
    );
    expect((await sdk.listProjects({ client: orgClient, path: { account: 'ada' } })).response.status).toBe(
      404,
    );
    expect(await tokenNames(ada, 'acme')).toEqual(['acme-ci']);
  });

  it('lets an organization token read the caller-wide lists narrowed to its organization, and nothing else', async () => {
    const created = await create(ada, 'acme', ['account:read', 'organization:read', 'organization:write'], {
      name: 'acme-agent',
    });
    expect(created.response.status).toBe(201);
    const orgClient = sdkClient(service, created.data!.token);
    const accounts = await sdk.listAccounts({ client: orgClient });
    expect(accounts.data?.items.map((a) => a.handle)).toEqual(['acme']);
    const organizations = await sdk.listOrganizations({ client: orgClient });
    expect(organizations.data?.items.map((o) => o.handle)).toEqual(['acme']);
    // Its lists are its own: a cursor of ada's personal lists is not one of them (it read an empty page).
    const personal = await sdk.listAccounts({ client: ada.client, query: { limit: 1 } });
    expect(personal.data?.nextCursor).toEqual(expect.any(String));
    const crossed = await sdk.listAccounts({
      client: orgClient,
      query: { cursor: personal.data!.nextCursor! },
    });
    expect(crossed.response.status).toBe(400);
    expect(crossed.error?.errors).toEqual([
      { pointer: '/query/cursor', message: expect.stringMatching(/another list/) },
    ]);
    const newOrg = await sdk.createOrganization({
      client: orgClient,
      body: { handle: 'escape-hatch', displayName: 'Escape' },
    });
    expect(newOrg.response.status).toBe(403);
    expect(
      (await sdk.getOrganization({ client: ada.client, path: { org: 'escape-hatch' } })).response.status,
    ).toBe(404);
  });

  it('confines an organization token to its organization: another, public organization does not exist for it', async () => {
    await withDatabase(async (em) => {
      createOrganization(em, await em.findOneOrFail(User, bob.userId), {
        handle: 'globex',
        displayName: 'Globex',
        visibility: 'public',
      });
    });
    // Public: any personal token may read it.
    expect(
      (await sdk.listProjects({ client: ada.client, path: { account: 'globex' } })).response.status,
    ).toBe(200);
    const created = await create(ada, 'acme', ['project:read', 'organization:read'], { name: 'acme-only' });
    expect(created.response.status).toBe(201);
    const orgClient = sdkClient(service, created.data!.token);
    expect((await sdk.listProjects({ client: orgClient, path: { account: 'acme' } })).response.status).toBe(
      200,
    );
    expect((await sdk.listProjects({ client: orgClient, path: { account: 'globex' } })).response.status).toBe(
      404,
    );
    expect((await sdk.getOrganization({ client: orgClient, path: { org: 'globex' } })).response.status).toBe(
      404,
    );
  });

  it('never lets a token create one that outlives it: an explicit longer lifetime is a 400, the default is cut', async () => {
    const parent = await create(ada, 'ada', ['project:read', 'token:write', 'token:read'], {
      name: 'one-day-parent',
      expiresInDays: 1,
    });
    expect(parent.response.status).toBe(201);
    const parentExpiry = Date.parse(parent.data!.expiresAt!);
    const parentClient = sdkClient(service, parent.data!.token);
    const before = await tokenNames(ada, 'ada');

    for (const expiresInDays of [366, 2, 1]) {
      const longer = await sdk.createToken({
        client: parentClient,
        path: { account: 'ada' },
        body: { name: `child-${expiresInDays}`, scopes: ['project:read'], expiresInDays },
      });
      expect(longer.response.status, String(expiresInDays)).toBe(400);
      const problem = longer.error as { detail: string; errors: { pointer: string }[] };
      expect(problem.errors.map((e) => e.pointer)).toEqual(['/body/expiresInDays']);
      expect(problem.detail).toContain(parent.data!.expiresAt!);
    }
    expect(await tokenNames(ada, 'ada')).toEqual(before);

    // Without expiresInDays the child expires with its parent, not in the default 90 days.
    const child = await sdk.createToken({
      client: parentClient,
      path: { account: 'ada' },
      body: { name: 'child-default', scopes: ['project:read'] },
    });
    expect(child.response.status).toBe(201);
    expect(Date.parse(child.data!.expiresAt!)).toBeLessThanOrEqual(parentExpiry);
    expect(Date.parse(child.data!.expiresAt!)).toBeGreaterThan(Date.now() + 86_000_000);

    // A 30-day parent may create a 29-day child.
    const month = await create(ada, 'ada', ['project:read', 'token:write'], { expiresInDays: 30 });
    const shorter = await sdk.createToken({
      client: sdkClient(service, month.data!.token),
      path: { account: 'ada' },
      body: { name: 'child-29', scopes: ['project:read'], expiresInDays: 29 },
    });
    expect(shorter.response.status).toBe(201);
  });

  it('revokes idempotently, and a revoked token is rejected at once', async () => {
    const created = await create(ada, 'ada', ['project:read'], { name: 'to-revoke' });
    const client = sdkClient(service, created.data!.token);
    expect((await sdk.listProjects({ client, path: { account: 'ada' } })).response.status).toBe(200);

    const revoked = await sdk.revokeToken({
      client: ada.client,
      path: { account: 'ada', token: created.data!.id },
    });
    expect(revoked.response.status).toBe(204);
    const rejected = await sdk.listProjects({ client, path: { account: 'ada' } });
    expect(rejected.response.status).toBe(401);
    expect(rejected.response.headers.get('www-authenticate')).toContain('error="invalid_token"');

    const find = async () =>
      (
        await sdk.listTokens({ client: ada.client, path: { account: 'ada' }, query: { limit: 100 } })
      ).data!.items.find((t) => t.id === created.data!.id)!;
    const first = await find();
    expect(first.status).toBe('revoked');
    expect(first.revokedAt).not.toBeNull();
    const again = await sdk.revokeToken({
      client: ada.client,
      path: { account: 'ada', token: created.data!.id },
    });
    expect(again.response.status).toBe(204);
    expect((await find()).revokedAt).toBe(first.revokedAt);

    const unknown = await sdk.revokeToken({ client: ada.client, path: { account: 'ada', token: uuidv7() } });
    expect(unknown.response.status).toBe(404);
    const invalid = await sdk.revokeToken({
      client: ada.client,
      path: { account: 'ada', token: 'not-a-uuid' },
    });
    expect(invalid.response.status).toBe(400);
    expect((invalid.error as { errors: { pointer: string }[] }).errors[0]!.pointer).toBe('/params/token');
  });

  it('rejects an expired token with 401', async () => {
    const secret = await withDatabase(async (em) => {
      const account = await em.findOneOrFail(Account, { handle: 'ada' });
      return issueAccountToken(em, {
        account,
        createdById: ada.userId,
        name: 'expired',
        scopes: ['project:read'],
        expiresAt: new Date(Date.now() - 1000),
      }).secret;
    });
    const r = await sdk.listProjects({ client: sdkClient(service, secret), path: { account: 'ada' } });
    expect(r.response.status).toBe(401);
    const listed = (
      await sdk.listTokens({ client: ada.client, path: { account: 'ada' }, query: { limit: 100 } })
    ).data!.items.find((t) => t.name === 'expired');
    expect(listed?.status).toBe('expired');
  });

  it("hides another user's private account behind 404, for reads, creates and revokes", async () => {
    const target = await create(ada, 'ada', ['project:read'], { name: 'bob-cannot-touch' });
    expect((await sdk.listTokens({ client: bob.client, path: { account: 'ada' } })).response.status).toBe(
      404,
    );
    expect((await create(bob, 'ada', ['project:read'])).response.status).toBe(404);
    const revoke = await sdk.revokeToken({
      client: bob.client,
      path: { account: 'ada', token: target.data!.id },
    });
    expect(revoke.response.status).toBe(404);
    // Nor through his own account: a token id is looked up within the named account only.
    const sideways = await sdk.revokeToken({
      client: bob.client,
      path: { account: 'bob', token: target.data!.id },
    });
    expect(sideways.response.status).toBe(404);
    const client = sdkClient(service, target.data!.token);
    expect((await sdk.listProjects({ client, path: { account: 'ada' } })).response.status).toBe(200);
    // Members of acme do not see its tokens.
    expect((await sdk.listTokens({ client: bob.client, path: { account: 'acme' } })).response.status).toBe(
      404,
    );
  });

  it('needs token:read to list and token:write to create or revoke', async () => {
    const dave = await createTestUser(service, 'dave', ['token:read']);
    expect((await sdk.listTokens({ client: dave.client, path: { account: 'dave' } })).response.status).toBe(
      200,
    );
    const denied = await create(dave, 'dave', ['token:read']);
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain('scope="token:write"');
    const revoke = await sdk.revokeToken({ client: dave.client, path: { account: 'dave', token: uuidv7() } });
    expect(revoke.response.status).toBe(403);

    const erin = await createTestUser(service, 'erin', ['project:read']);
    const list = await sdk.listTokens({ client: erin.client, path: { account: 'erin' } });
    expect(list.response.status).toBe(403);
    expect(list.response.headers.get('www-authenticate')).toContain('scope="token:read"');
  });
});

/** POSTs `count` token creations at once from a child process; their statuses. */
describe('many personal tokens made at once', () => {
  it('are all made: the ceiling reads the creator roles on the request’s own connection', async () => {
    const fresh = await createTestUser(service, 'burst-maker');
    await withDatabase(async (em) => {
      const { organization } = createOrganization(em, await em.findOneOrFail(User, fresh.userId), {
        handle: 'burst-org',
        displayName: 'Burst',
      });
      return organization;
    });
    // The ceiling read the creator's roles on a second connection of the pool while the request held one
    // in its transaction: a burst of fifteen held the whole pool (10), each waiting for an eleventh until
    // the connect bound, so most answered 503 after 5 s and every other request stalled with them. A token
    // not used yet, so that no request of the burst finds its caller cached, and the burst from another
    // process, as a script's comes: requests sent from this test's own event loop never overlapped enough.
    const made0 = await create(fresh, 'burst-maker', ['token:write', 'token:read', 'glossary:read']);
    expect(made0.response.status).toBe(201);
    const answers = await burstFromAnotherProcess(
      Array.from({ length: 15 }, (_, i) => ({
        url: `${service.url}/api/v1/accounts/burst-maker/tokens`,
        method: 'POST',
        headers: { authorization: `Bearer ${made0.data!.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `burst ${i}`, scopes: ['glossary:read'] }),
      })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(15).fill(201));
    const names = await tokenNames(fresh, 'burst-maker');
    for (let i = 0; i < 15; i++) expect(names).toContain(`burst ${i}`);
  });
});
