import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService();
const db = useDatabaseClient(service);
const { ada, bob } = useUsers(service, 'ada', 'bob');

async function createOrg(owner: TestUser, handle: string, visibility: 'private' | 'public' = 'private') {
  const created = await sdk.createOrganization({
    client: owner.client,
    body: { handle, displayName: `${handle} Inc.`, visibility },
  });
  expect(created.response.status).toBe(201);
  expect(created.response.headers.get('location')).toBe(`/api/v1/organizations/${handle}`);
  return created.data!;
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query(`select count(*)::int as n from (${sql}) t`, params);
  return rows[0].n;
}

/** Makes `user` a member of `org` through an invitation they accept with their own token. */
async function addMember(admin: TestUser, org: string, user: TestUser) {
  const invitation = await sdk.createInvitation({
    client: admin.client,
    path: { org },
    body: { email: `${user.handle}@example.com` },
  });
  expect(invitation.response.status).toBe(201);
  const accepted = await sdk.acceptInvitation({
    client: user.client,
    body: { token: invitation.data!.acceptToken },
  });
  expect(accepted.response.status).toBe(200);
}

describe('organizations through the generated SDK', () => {
  it('creates an organization whose creator is its admin, and records an audit event', async () => {
    const created = await createOrg(ada, 'acme');
    expect(created).toMatchObject({
      handle: 'acme',
      displayName: 'acme Inc.',
      visibility: 'private',
      role: 'admin',
    });

    const got = await sdk.getOrganization({ client: ada.client, path: { org: 'acme' } });
    expect(got.data).toEqual(created);

    const mine = await sdk.listOrganizations({ client: ada.client });
    expect(mine.data?.items.map((o) => [o.handle, o.role])).toEqual([['acme', 'admin']]);

    const members = await sdk.listMembers({ client: ada.client, path: { org: 'acme' } });
    expect(members.data?.items.map((m) => [m.user, m.role])).toEqual([['ada', 'admin']]);

    // The organization is an account too: it shows up among the caller's accounts.
    const account = await sdk.getAccount({ client: ada.client, path: { account: 'acme' } });
    expect(account.data).toMatchObject({ kind: 'organization', role: 'organization_admin' });

    const { rows } = await db.query(
      `select e.action, e.actor_user_id, e.details from audit_events e
        where e.action = 'organization.create' and e.account_id = $1`,
      [created.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].actor_user_id).toBe(ada.userId);
    expect(rows[0].details).toMatchObject({ handle: 'acme' });
  });

  it('answers a taken or reserved handle and invalid input with 409 or 400, creating nothing', async () => {
    await createOrg(ada, 'taken-org');
    const before = await count('select 1 from accounts', []);

    const taken = await sdk.createOrganization({
      client: bob.client,
      body: { handle: 'taken-org', displayName: 'Again' },
    });
    expect(taken.response.status).toBe(409);
    // A user's personal handle is taken just the same.
    const personal = await sdk.createOrganization({
      client: bob.client,
      body: { handle: 'ada', displayName: 'Ada' },
    });
    expect(personal.response.status).toBe(409);

    const reserved = await sdk.createOrganization({
      client: bob.client,
      body: { handle: 'admin', displayName: 'Admin' },
    });
    expect(reserved.response.status).toBe(400);
    expect(reserved.error?.errors?.[0]?.pointer).toBe('/body/handle');

    const invalid = await sdk.createOrganization({
      client: bob.client,
      body: { handle: 'Bad Handle', displayName: '', visibility: 'secret' } as never,
    });
    expect(invalid.response.status).toBe(400);
    expect(invalid.response.headers.get('content-type')).toContain('application/problem+json');
    const pointers = invalid.error?.errors?.map((e) => e.pointer);
    expect(pointers).toEqual(
      expect.arrayContaining(['/body/handle', '/body/displayName', '/body/visibility']),
    );

    expect(await count('select 1 from accounts', [])).toBe(before);
    expect((await sdk.listOrganizations({ client: bob.client })).data?.items).toEqual([]);
  });

  it("hides another user's private organization behind 404, for reads and writes", async () => {
    await createOrg(ada, 'hidden');
    for (const result of [
      await sdk.getOrganization({ client: bob.client, path: { org: 'hidden' } }),
      await sdk.updateOrganization({
        client: bob.client,
        path: { org: 'hidden' },
        body: { displayName: 'Mine' },
      }),
      await sdk.deleteOrganization({ client: bob.client, path: { org: 'hidden' } }),
      await sdk.listMembers({ client: bob.client, path: { org: 'hidden' } }),
    ]) {
      expect(result.response.status).toBe(404);
    }
    const got = await sdk.getOrganization({ client: ada.client, path: { org: 'hidden' } });
    expect(got.data?.displayName).toBe('hidden Inc.');
    // A personal account passes as no organization, even to its owner.
    const personal = await sdk.getOrganization({ client: ada.client, path: { org: 'ada' } });
    expect(personal.response.status).toBe(404);
  });

  it('answers 403 insufficient_scope to a token without the scope', async () => {
    await createOrg(ada, 'scoped');
    const readOnly = await createTestUser(service, 'ada-reader', ['organization:read']);
    const create = await sdk.createOrganization({
      client: readOnly.client,
      body: { handle: 'never', displayName: 'Never' },
    });
    expect(create.response.status).toBe(403);
    expect(create.response.headers.get('www-authenticate')).toContain(
      'error="insufficient_scope", scope="organization:write"',
    );
    const noRead = await createTestUser(service, 'no-org-read', ['project:read']);
    const get = await sdk.getOrganization({ client: noRead.client, path: { org: 'scoped' } });
    expect(get.response.status).toBe(403);
    expect(get.response.headers.get('www-authenticate')).toContain('scope="organization:read"');
    expect(await count('select 1 from accounts where handle = $1', ['never'])).toBe(0);
  });

  it('lets an admin update an organization; invalid input is 400 and changes nothing', async () => {
    await createOrg(ada, 'renamed');
    const updated = await sdk.updateOrganization({
      client: ada.client,
      path: { org: 'renamed' },
      body: { displayName: 'Renamed Ltd.', visibility: 'public' },
    });
    expect(updated.response.status).toBe(200);
    expect(updated.data).toMatchObject({ displayName: 'Renamed Ltd.', visibility: 'public', role: 'admin' });

    for (const body of [{}, { displayName: '' }, { visibility: 'secret' }, { handle: 'other' }]) {
      const bad = await sdk.updateOrganization({
        client: ada.client,
        path: { org: 'renamed' },
        body: body as never,
      });
      expect(bad.response.status).toBe(400);
    }
    const got = await sdk.getOrganization({ client: ada.client, path: { org: 'renamed' } });
    expect(got.data).toMatchObject({ handle: 'renamed', displayName: 'Renamed Ltd.', visibility: 'public' });
    expect(
      await count(`select 1 from audit_events where action = 'organization.update' and account_id = $1`, [
        got.data!.id,
      ]),
    ).toBe(1);
  });

  it('lets a member read the organization but not change or delete it (403)', async () => {
    await createOrg(ada, 'crew');
    await addMember(ada, 'crew', bob);
    const got = await sdk.getOrganization({ client: bob.client, path: { org: 'crew' } });
    expect(got.data?.role).toBe('member');
    const listed = await sdk.listOrganizations({ client: bob.client });
    expect(listed.data?.items.find((o) => o.handle === 'crew')?.role).toBe('member');

    const update = await sdk.updateOrganization({
      client: bob.client,
      path: { org: 'crew' },
      body: { displayName: 'Bob Co.' },
    });
    expect(update.response.status).toBe(403);
    const remove = await sdk.deleteOrganization({ client: bob.client, path: { org: 'crew' } });
    expect(remove.response.status).toBe(403);
    expect((await sdk.getOrganization({ client: ada.client, path: { org: 'crew' } })).data?.displayName).toBe(
      'crew Inc.',
    );
  });

  it('deletes an organization with its projects, memberships and invitations in one go', async () => {
    const org = await createOrg(ada, 'doomed');
    await addMember(ada, 'doomed', bob);
    const project = await sdk.createProject({
      client: ada.client,
      path: { account: 'doomed' },
      body: { handle: 'website', name: 'Website', sourceLocale: 'en' },
    });
    expect(project.response.status).toBe(201);
    const pending = await sdk.createInvitation({
      client: ada.client,
      path: { org: 'doomed' },
      body: { email: 'someone@example.com' },
    });
    expect(pending.response.status).toBe(201);
    const orgId = await db.query('select id from organizations where account_id = $1', [org.id]);

    const deleted = await sdk.deleteOrganization({ client: ada.client, path: { org: 'doomed' } });
    expect(deleted.response.status).toBe(204);

    expect((await sdk.getOrganization({ client: ada.client, path: { org: 'doomed' } })).response.status).toBe(
      404,
    );
    expect(await count('select 1 from accounts where id = $1', [org.id])).toBe(0);
    expect(await count('select 1 from projects where account_id = $1', [org.id])).toBe(0);
    expect(await count('select 1 from glossary_settings where account_id = $1', [org.id])).toBe(0);
    const organizationId = orgId.rows[0].id;
    expect(await count('select 1 from memberships where organization_id = $1', [organizationId])).toBe(0);
    expect(await count('select 1 from invitations where organization_id = $1', [organizationId])).toBe(0);
    // The audit trail outlives the account and says what was deleted.
    const { rows } = await db.query(
      `select details from audit_events where action = 'organization.delete' and resource_id = $1`,
      [organizationId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].details).toMatchObject({ handle: 'doomed', accountId: org.id, projects: 1 });
    // The handle is free again.
    await createOrg(bob, 'doomed');
  });

  it('paginates the caller’s organizations with a stable cursor', async () => {
    const carol = await createTestUser(service, 'carol');
    for (const handle of ['c-one', 'c-two', 'c-three']) await createOrg(carol, handle);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const result = await sdk.listOrganizations({ client: carol.client, query: { limit: 2, cursor } });
      expect(result.data!.items.length).toBeLessThanOrEqual(2);
      seen.push(...result.data!.items.map((o) => o.handle));
      cursor = result.data!.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['c-one', 'c-two', 'c-three']);
  });
});
