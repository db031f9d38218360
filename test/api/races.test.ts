import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import type { TestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

// Requests that race each other on the same rows. Whatever order the database settles them in, each gets
// the answer it would get alone in that order (a deleted thing is a 404), never a 500, and the record
// holds each change once.

const service = useService();
const db = useDatabaseClient(service);
const { ada, bob } = useUsers(service, 'ada', 'bob');

/** How often each race is run: it loses (on the code before the fix) in most tries, not in every one. */
const TRIES = 6;

async function createOrg(owner: TestUser, handle: string) {
  const created = await sdk.createOrganization({
    client: owner.client,
    body: { handle, displayName: handle },
  });
  expect(created.response.status).toBe(201);
}

async function auditCount(action: string, handle: string): Promise<number> {
  const { rows } = await db.query(
    `select count(*)::int as n from audit_events where action = $1 and details->>'handle' = $2`,
    [action, handle],
  );
  return rows[0].n;
}

describe('requests racing each other', () => {
  it('deletes an organization once when two deletes of it arrive together', async () => {
    for (let i = 0; i < TRIES; i++) {
      const org = `twice-${i}`;
      await createOrg(ada, org);
      const statuses = await Promise.all(
        [1, 2].map(async () => {
          const { response } = await sdk.deleteOrganization({ client: ada.client, path: { org } });
          return response.status;
        }),
      );
      expect(statuses.sort()).toEqual([204, 404]);
      expect(await auditCount('organization.delete', org)).toBe(1);
    }
  });

  it('answers writes that race the deletion of their account with their result or a 404', async () => {
    for (let i = 0; i < TRIES; i++) {
      const org = `doomed-${i}`;
      await createOrg(ada, org);
      const writes = [
        ...[1, 2, 3].map(() =>
          sdk.saveGlossary({
            client: ada.client,
            path: { account: org },
            body: { entries: [{ term: 'a' }] },
          }),
        ),
        ...[1, 2].map((n) =>
          sdk.createProject({
            client: ada.client,
            path: { account: org },
            body: { handle: `p${n}`, name: `P${n}`, sourceLocale: 'en', targetLocales: ['de'] },
          }),
        ),
      ];
      const deletion = sdk.deleteOrganization({ client: ada.client, path: { org } });
      const [deleted, ...results] = await Promise.all([deletion, ...writes]);
      expect(deleted.response.status).toBe(204);
      for (const { response } of results) expect([200, 201, 404, 409]).toContain(response.status);
      const { rows } = await db.query('select count(*)::int as n from accounts where handle = $1', [org]);
      expect(rows[0].n).toBe(0);
    }
  });

  it('deletes a project once when two deletes of it arrive together', async () => {
    for (let i = 0; i < TRIES; i++) {
      const project = `gone-${i}`;
      const created = await sdk.createProject({
        client: ada.client,
        path: { account: 'ada' },
        body: { handle: project, name: project, sourceLocale: 'en', targetLocales: ['de'] },
      });
      expect(created.response.status).toBe(201);
      const statuses = await Promise.all(
        [1, 2].map(async () => {
          const { response } = await sdk.deleteProject({
            client: ada.client,
            path: { account: 'ada', project },
          });
          return response.status;
        }),
      );
      expect(statuses.sort()).toEqual([204, 404]);
      expect(await auditCount('project.delete', project)).toBe(1);
    }
  });

  it('removes a member once when two removals of them arrive together', async () => {
    await createOrg(ada, 'crew');
    for (let i = 0; i < TRIES; i++) {
      const invitation = await sdk.createInvitation({
        client: ada.client,
        path: { org: 'crew' },
        body: { email: `${bob.handle}@example.com` },
      });
      expect(invitation.response.status).toBe(201);
      const accepted = await sdk.acceptInvitation({
        client: bob.client,
        body: { token: invitation.data!.acceptToken },
      });
      expect(accepted.response.status).toBe(200);
      const statuses = await Promise.all(
        [1, 2].map(async () => {
          const { response } = await sdk.removeMember({
            client: ada.client,
            path: { org: 'crew', user: bob.handle },
          });
          return response.status;
        }),
      );
      expect(statuses.sort()).toEqual([204, 404]);
    }
    const { rows } = await db.query(
      `select count(*)::int as n from audit_events where action = 'member.remove' and details->>'user' = $1`,
      [bob.handle],
    );
    expect(rows[0].n).toBe(TRIES);
  });

  it('records one revocation when two revokes of a token arrive together', async () => {
    for (let i = 0; i < TRIES; i++) {
      const created = await sdk.createToken({
        client: ada.client,
        path: { account: 'ada' },
        body: { name: `twice-${i}`, scopes: ['project:read'] },
      });
      expect(created.response.status).toBe(201);
      const token = created.data!.id;
      const statuses = await Promise.all(
        [1, 2].map(async () => {
          const { response } = await sdk.revokeToken({ client: ada.client, path: { account: 'ada', token } });
          return response.status;
        }),
      );
      expect(statuses).toEqual([204, 204]);
      const { rows } = await db.query(
        `select count(*)::int as n from audit_events where action = 'token.revoke' and resource_id = $1`,
        [token],
      );
      expect(rows[0].n).toBe(1);
    }
  });

  it('makes each of several models made the default at once the default in turn, none refused', async () => {
    for (let i = 0; i < TRIES; i++) {
      const models = [1, 2, 3].map((n) => `default-${i}-${n}`);
      // Created as the default together, then made the default again together (an update).
      const created = await Promise.all(
        models.map(async (handle) => {
          const { response } = await sdk.createModel({
            client: ada.client,
            path: { account: 'ada' },
            body: { handle, model: 'openai:gpt-4o', isDefault: true },
          });
          return response.status;
        }),
      );
      expect(created).toEqual([201, 201, 201]);
      for (const handle of models) {
        const { response } = await sdk.updateModel({
          client: ada.client,
          path: { account: 'ada', modelHandle: handle },
          body: { isDefault: false },
        });
        expect(response.status).toBe(200);
      }
      const updated = await Promise.all(
        models.map(async (handle) => {
          const { response } = await sdk.updateModel({
            client: ada.client,
            path: { account: 'ada', modelHandle: handle },
            body: { isDefault: true },
          });
          return response.status;
        }),
      );
      expect(updated).toEqual([200, 200, 200]);
      const { rows } = await db.query(
        `select count(*)::int as n from account_models m join accounts a on a.id = m.account_id
          where a.handle = 'ada' and m.is_default`,
      );
      expect(rows[0].n).toBe(1);
    }
  });
});
