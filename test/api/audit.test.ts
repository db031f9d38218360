import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';
import { jsonRpcOf, postMcp } from '../mcp/helpers.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

// A scripted session of an organization's admin, through two doors, then read back from the audit log.
const service = useService();
const db = useDatabaseClient(service);
const { ada, grace, bob } = useUsers(service, 'ada', 'grace', 'bob');
// ada: admin of "acme"
// grace: member, promoted to admin during the session
// bob: member throughout
let tokenId: string;

async function mcpCall(user: TestUser, name: string, args: Record<string, unknown>) {
  const response = await postMcp(
    service,
    { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
    { authorization: `Bearer ${user.token}` },
  );
  expect(response.status).toBe(200);
  return (await jsonRpcOf(response)) as {
    result: { isError?: boolean; structuredContent?: { items: { action: string }[] } };
  };
}

beforeAll(async () => {
  await createTestOrganization(service, 'acme', ada, { members: [grace, bob] });

  const project = await sdk.createProject({
    client: ada.client,
    path: { account: 'acme' },
    body: { handle: 'site', name: 'Site', sourceLocale: 'en', targetLocales: ['de'] },
    headers: { 'x-request-id': 'script-1' },
  });
  expect(project.response.status).toBe(201);
  const promoted = await mcpCall(ada, 'update_member_role', { org: 'acme', user: 'grace', role: 'admin' });
  expect(promoted.result.isError).toBeFalsy();
  const token = await sdk.createToken({
    client: ada.client,
    path: { account: 'acme' },
    body: { name: 'ci', scopes: ['project:read'] },
  });
  expect(token.response.status).toBe(201);
  tokenId = token.data!.id;
  const revoked = await sdk.revokeToken({ client: ada.client, path: { account: 'acme', token: tokenId } });
  expect(revoked.response.status).toBe(204);
});

describe('listAuditEvents', () => {
  it("lists the session's events in order, with who, what, when, address and door", async () => {
    const { data, response } = await sdk.listAuditEvents({ client: ada.client, path: { account: 'acme' } });
    expect(response.status).toBe(200);
    const items = data!.items;
    expect(items.map((e) => [e.action, e.door])).toEqual([
      ['project.create', 'rest'],
      ['member.update', 'mcp'],
      ['token.create', 'rest'],
      ['token.revoke', 'rest'],
    ]);
    for (const event of items) {
      expect(event.actor.user).toBe('ada');
      expect(event.ip).toMatch(/127\.0\.0\.1/);
      expect(Date.parse(event.occurredAt)).toBeGreaterThan(Date.now() - 60_000);
    }
    expect(items[0]!.requestId).toBe('script-1');
    expect(items[0]!.resourceType).toBe('project');
    expect(items[1]!.details).toEqual({ user: 'grace', from: 'member', to: 'admin' });
    expect(items[3]).toMatchObject({ resourceType: 'account_token', resourceId: tokenId });
    // Non-decreasing time, as listed.
    const times = items.map((e) => Date.parse(e.occurredAt));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(data!.nextCursor).toBeNull();
  });

  it('pages with a cursor and filters by action, actor and time', async () => {
    const first = await sdk.listAuditEvents({
      client: ada.client,
      path: { account: 'acme' },
      query: { limit: 3 },
    });
    expect(first.data!.items).toHaveLength(3);
    const second = await sdk.listAuditEvents({
      client: ada.client,
      path: { account: 'acme' },
      query: { limit: 3, cursor: first.data!.nextCursor! },
    });
    expect(second.data!.items.map((e) => e.action)).toEqual(['token.revoke']);
    expect(second.data!.nextCursor).toBeNull();

    const byAction = await sdk.listAuditEvents({
      client: ada.client,
      path: { account: 'acme' },
      query: { action: 'token.create' },
    });
    expect(byAction.data!.items.map((e) => e.resourceId)).toEqual([tokenId]);

    for (const [actor, count] of [
      ['ada', 4],
      ['bob', 0],
      ['nobody-at-all', 0],
    ] as const) {
      const byActor = await sdk.listAuditEvents({
        client: ada.client,
        path: { account: 'acme' },
        query: { actor },
      });
      expect(byActor.data!.items).toHaveLength(count);
    }

    const all = first.data!.items;
    const since = all[1]!.occurredAt;
    const until = all[2]!.occurredAt;
    const window = await sdk.listAuditEvents({
      client: ada.client,
      path: { account: 'acme' },
      query: { since, until },
    });
    const expected = [...all, ...second.data!.items].filter(
      (e) => Date.parse(e.occurredAt) >= Date.parse(since) && Date.parse(e.occurredAt) < Date.parse(until),
    );
    expect(window.data!.items.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    expect(window.data!.items.map((e) => e.action)).toContain('member.update');
    expect(window.data!.items.map((e) => e.action)).not.toContain('project.create');
  });

  it('reads any time the schema takes: a leap second, and the year 0000 as the beginning', async () => {
    for (const [query, count] of [
      [{ since: '2016-12-31T23:59:60Z' }, 4],
      [{ until: '9998-12-31T23:59:60Z' }, 4],
      [{ since: '0000-01-01T00:00:00Z' }, 4],
      [{ until: '0000-01-01T00:00:00Z' }, 0],
    ] as const) {
      const { data, response } = await sdk.listAuditEvents({
        client: ada.client,
        path: { account: 'acme' },
        query,
      });
      expect(response.status).toBe(200);
      expect(data!.items).toHaveLength(count);
    }
  });

  it('answers bad filters with 400 problem+json', async () => {
    const bad: Record<string, string>[] = [
      { action: 'DROP TABLE' },
      { since: 'yesterday' },
      { actor: 'Not A Handle' },
    ];
    for (const query of bad) {
      const response = await fetch(
        `${service.url}/api/v1/accounts/acme/audit-events?${new URLSearchParams(query)}`,
        { headers: { authorization: `Bearer ${ada.token}` } },
      );
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toMatch(/problem\+json/);
      expect((await response.json()).errors[0].pointer).toMatch(/^\/query\//);
    }
  });

  it('shows the events to admins only: the promoted admin reads them, a member gets 404', async () => {
    const asGrace = await sdk.listAuditEvents({ client: grace.client, path: { account: 'acme' } });
    expect(asGrace.response.status).toBe(200);
    expect(asGrace.data!.items).toHaveLength(4);
    const asBob = await sdk.listAuditEvents({ client: bob.client, path: { account: 'acme' } });
    expect(asBob.response.status).toBe(404);
    const viaMcp = await mcpCall(bob, 'list_audit_events', { account: 'acme' });
    expect(viaMcp.result.isError).toBe(true);
  });

  it("lets a person read their own account's events, and nobody else's", async () => {
    const personal = await sdk.createToken({
      client: bob.client,
      path: { account: 'bob' },
      body: { name: 'laptop', scopes: ['project:read'] },
    });
    expect(personal.response.status).toBe(201);
    const own = await mcpCall(bob, 'list_audit_events', { account: 'bob' });
    expect(own.result.isError).toBeFalsy();
    expect(own.result.structuredContent!.items.map((e) => e.action)).toEqual(['token.create']);
    expect(
      (await sdk.listAuditEvents({ client: ada.client, path: { account: 'bob' } })).response.status,
    ).toBe(404);
  });

  it("records a person's changes to themselves in their own account's log", async () => {
    const dora = await createTestUser(service, 'dora');
    const updated = await sdk.updateCurrentUser({ client: dora.client, body: { displayName: 'Dora M.' } });
    expect(updated.response.status).toBe(200);
    const own = await sdk.listAuditEvents({ client: dora.client, path: { account: 'dora' } });
    expect(own.data!.items.map((e) => [e.action, e.resourceType])).toEqual([['user.update', 'user']]);
  });

  it('needs the audit:read scope', async () => {
    const limited = await createTestUser(
      service,
      'carol',
      ALL_SCOPES.filter((s) => s !== 'audit:read'),
    );
    const response = await sdk.listAuditEvents({ client: limited.client, path: { account: 'carol' } });
    expect(response.response.status).toBe(403);
    expect(response.response.headers.get('www-authenticate')).toMatch(/insufficient_scope.*audit:read/);
  });

  it('keeps the log append-only in the database itself', async () => {
    const before = await db.query('select count(*)::int as n from audit_events');
    await expect(db.query(`update audit_events set action = 'project.delete'`)).rejects.toThrow(
      /never edited/,
    );
    await expect(db.query('delete from audit_events')).rejects.toThrow(/never deleted/);
    await expect(db.query('truncate audit_events')).rejects.toThrow(/never deleted/);
    // Nor may an update forget who did it, or take an event out of its account's log, while the person
    // and the account are still there.
    await expect(
      db.query('update audit_events set actor_user_id = null where actor_user_id = $1', [bob.userId]),
    ).rejects.toThrow(/never edited/);
    await expect(
      db.query('update audit_events set account_id = null where account_id is not null'),
    ).rejects.toThrow(/never edited/);
    const after = await db.query('select count(*)::int as n from audit_events');
    expect(after.rows[0].n).toBe(before.rows[0].n);
    // Deleting a person only forgets the reference: their events stay, with no actor.
    await db.query(`delete from users where id = $1`, [bob.userId]);
    const orphaned = await db.query(
      `select count(*)::int as n from audit_events where actor_user_id is null and action = 'token.create'`,
    );
    expect(orphaned.rows[0].n).toBe(1);
  });
});
