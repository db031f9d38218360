import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { uniqueHandle } from '../oauth/helpers.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

// Requests that race each other on the same rows. Whatever order the database settles them in, each gets
// the answer it would get alone in that order (a deleted thing is a 404), never a 500, and the record
// holds each change once.

const METRICS_TOKEN = randomBytes(32).toString('hex');
const service = useService(() => startTestService({ METRICS_TOKEN }));
const db = useDatabaseClient(service);

/** How many writes this instance ran again after a deadlock (operation_retries_total). */
async function deadlockRetries(): Promise<number> {
  const scraped = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const text = await scraped.text();
  return [...text.matchAll(/^operation_retries_total\{[^}]*reason="deadlock"[^}]*\} (\d+)/gm)].reduce(
    (sum, [, n]) => sum + Number(n),
    0,
  );
}
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

  describe('on memberships', () => {
    let round = 0;
    /** A new organization of ada's with bob in it, an admin unless said otherwise. */
    async function orgWithBob(role: 'admin' | 'member' = 'admin'): Promise<string> {
      const org = `mship-${++round}`;
      await createTestOrganization(service, org, ada, { members: [bob] });
      if (role === 'admin') {
        const { response } = await sdk.updateMember({
          client: ada.client,
          path: { org, user: 'bob' },
          body: { role: 'admin' },
        });
        expect(response.status).toBe(200);
      }
      return org;
    }
    const removeBob = async (org: string) =>
      (await sdk.removeMember({ client: ada.client, path: { org, user: 'bob' } })).response.status;
    /** The organization's audit events of `action`, with the role a removal recorded. */
    async function events(action: string, org: string): Promise<{ action: string; role: string | null }[]> {
      const { rows } = await db.query(
        `select e.action, e.details->>'role' as role from audit_events e join accounts a on a.id = e.account_id
          where a.handle = $1 and e.action like $2`,
        [org, action],
      );
      return rows;
    }

    it('revokes every token a member made while being removed, so none works if they come back', async () => {
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob();
        const [removed, ...created] = await Promise.all([
          removeBob(org),
          ...[1, 2, 3, 4, 5, 6].map(
            async (n) =>
              (
                await sdk.createToken({
                  client: bob.client,
                  path: { account: org },
                  body: { name: `during ${n}`, scopes: ['project:write'] },
                })
              ).response.status,
          ),
        ]);
        expect(removed).toBe(204);
        for (const status of created) expect([201, 404]).toContain(status);
        const { rows } = await db.query(
          `select count(*)::int as n from account_tokens t join accounts a on a.id = t.account_id
            where a.handle = $1 and t.revoked_at is null`,
          [org],
        );
        expect(rows[0].n).toBe(0);
      }
    });

    it('revokes every invitation an admin sent while being removed', async () => {
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob();
        const [removed, ...sent] = await Promise.all([
          removeBob(org),
          ...[1, 2, 3, 4, 5, 6].map(
            async (n) =>
              (
                await sdk.createInvitation({
                  client: bob.client,
                  path: { org },
                  body: { email: `walk-back-${n}@example.com`, role: 'admin' },
                })
              ).response.status,
          ),
        ]);
        expect(removed).toBe(204);
        for (const status of sent) expect([201, 404]).toContain(status);
        const { rows } = await db.query(
          `select count(*)::int as n from invitations i join organizations o on o.id = i.organization_id
            join accounts a on a.id = o.account_id where a.handle = $1 and i.status = 'pending'`,
          [org],
        );
        expect(rows[0].n).toBe(0);
      }
    });

    it('changes a role that is being removed either before the removal or not at all (404)', async () => {
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob('member');
        const [removed, promoted] = await Promise.all([
          removeBob(org),
          sdk
            .updateMember({ client: ada.client, path: { org, user: 'bob' }, body: { role: 'admin' } })
            .then(({ response }) => response.status),
        ]);
        expect(removed).toBe(204);
        expect([200, 404]).toContain(promoted);
        // A change that answered 200 came before the removal, which then removed an admin; one that
        // answered 404 came after it and recorded nothing.
        const removals = await events('member.remove', org);
        expect(removals).toEqual([{ action: 'member.remove', role: promoted === 200 ? 'admin' : 'member' }]);
        // orgWithBob('member') made no change: only this test's promotion can have been recorded.
        expect(await events('member.update', org)).toHaveLength(promoted === 200 ? 1 : 0);
      }
    });

    it('records one change when the same role change arrives several times at once', async () => {
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob('member');
        const statuses = await Promise.all(
          [1, 2, 3, 4].map(async () => {
            const { response } = await sdk.updateMember({
              client: ada.client,
              path: { org, user: 'bob' },
              body: { role: 'admin' },
            });
            return response.status;
          }),
        );
        expect(statuses).toEqual([200, 200, 200, 200]);
        expect(await events('member.update', org)).toHaveLength(1);
      }
    });

    it('answers an acceptance racing the revocation of its invitation as either order would: accepted or 410', async () => {
      const carol = await createTestUser(service, uniqueHandle('carol'));
      for (let i = 0; i < TRIES; i++) {
        const org = `answer-${++round}`;
        await createTestOrganization(service, org, ada);
        const sent = await sdk.createInvitation({
          client: ada.client,
          path: { org },
          body: { email: `${carol.handle}@example.com`, role: 'member' },
        });
        expect(sent.response.status).toBe(201);
        const [accepted, revoked] = await Promise.all([
          sdk
            .acceptInvitation({ client: carol.client, body: { token: sent.data!.acceptToken } })
            .then(({ response }) => response.status),
          sdk
            .revokeInvitation({ client: ada.client, path: { org, invitation: sent.data!.id } })
            .then(({ response }) => response.status),
        ]);
        // Revoking an invitation that was accepted first is still a 204 (nothing pending is left).
        expect(revoked).toBe(204);
        expect([200, 201, 410]).toContain(accepted);
      }
    });

    it('deletes an organization while its members write in it without a deadlock between them', async () => {
      const before = await deadlockRetries();
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob();
        const [deleted, project, token] = await Promise.all([
          sdk
            .deleteOrganization({ client: ada.client, path: { org } })
            .then(({ response }) => response.status),
          sdk
            .createProject({
              client: bob.client,
              path: { account: org },
              body: { handle: 'during', name: 'During', sourceLocale: 'en' },
            })
            .then(({ response }) => response.status),
          sdk
            .createToken({
              client: bob.client,
              path: { account: org },
              body: { name: 'during', scopes: ['project:read'] },
            })
            .then(({ response }) => response.status),
        ]);
        expect(deleted).toBe(204);
        expect([201, 404]).toContain(project);
        expect([201, 404]).toContain(token);
      }
      // Each write waited for the other or found the organization gone; none deadlocked (which PostgreSQL
      // takes a second to notice, and the pipeline then settles by running the write again).
      expect(await deadlockRetries()).toBe(before);
    });

    it('adds a domain sent twice at once as it would one after the other: both 201', async () => {
      for (let i = 0; i < TRIES; i++) {
        const org = `dom-${++round}`;
        await createTestOrganization(service, org, ada);
        const statuses = await Promise.all(
          [1, 2].map(async () => {
            const { response } = await sdk.addDomain({
              client: ada.client,
              path: { org },
              body: { domain: `${org}.example.org` },
            });
            return response.status;
          }),
        );
        expect(statuses).toEqual([201, 201]);
      }
    });

    it('answers a demotion racing the member leaving with what either order gives, never "last admin"', async () => {
      const before = await deadlockRetries();
      for (let i = 0; i < TRIES; i++) {
        const org = await orgWithBob();
        const [demoted, left] = await Promise.all([
          sdk
            .updateMember({ client: ada.client, path: { org, user: 'bob' }, body: { role: 'member' } })
            .then(({ response }) => response.status),
          sdk
            .leaveOrganization({ client: bob.client, path: { org } })
            .then(({ response }) => response.status),
        ]);
        expect(left).toBe(204);
        expect([200, 404]).toContain(demoted);
      }
      expect(await deadlockRetries()).toBe(before);
    });
  });
});
