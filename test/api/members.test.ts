import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { createTestUser, sdkClient } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService();
const db = useDatabaseClient(service);
const { ada, grace, bob } = useUsers(service, 'ada', 'grace', 'bob');

async function createOrg(handle: string, visibility: 'private' | 'public' = 'private') {
  const created = await sdk.createOrganization({
    client: ada.client,
    body: { handle, displayName: handle, visibility },
  });
  expect(created.response.status).toBe(201);
  return created.data!;
}

async function invite(org: string, email: string, role?: 'admin' | 'member') {
  const created = await sdk.createInvitation({ client: ada.client, path: { org }, body: { email, role } });
  expect(created.response.status).toBe(201);
  expect(created.response.headers.get('cache-control')).toBe('no-store'); // its accept token is shown once
  return created.data!;
}

async function members(org: string) {
  const result = await sdk.listMembers({ client: ada.client, path: { org } });
  expect(result.response.status).toBe(200);
  // Formatted by PostgreSQL (src/db/columns.ts): the same text toISOString() gives.
  for (const member of result.data!.items) {
    expect(new Date(member.since).toISOString()).toBe(member.since);
  }
  return result.data!.items.map((m) => [m.user, m.role]);
}

async function invitationStatus(id: string): Promise<string> {
  const { rows } = await db.query('select status from invitations where id = $1', [id]);
  return rows[0].status;
}

/** An organization token of the user's, stored as the tokens API would store it; returns its id. */
async function insertOrganizationToken(accountId: string, userId: string): Promise<string> {
  const { rows } = await db.query(
    `insert into account_tokens (id, account_id, created_by_id, name, scopes, token_prefix, token_hash)
     values (gen_random_uuid(), $1, $2, 'ci', '{project:read}', 'l10n_xxxxxxx', sha256(gen_random_uuid()::text::bytea))
     returning id`,
    [accountId, userId],
  );
  return rows[0].id;
}

async function auditCount(action: string, resourceId: string): Promise<number> {
  const { rows } = await db.query(
    'select count(*)::int as n from audit_events where action = $1 and resource_id = $2',
    [action, resourceId],
  );
  return rows[0].n;
}

describe('members and invitations through the generated SDK', () => {
  it('invites a member who accepts with their own token and appears in the member list', async () => {
    const org = await createOrg('acme');
    const invitation = await invite('acme', 'Grace@Example.com');
    expect(invitation).toMatchObject({
      organization: 'acme',
      email: 'grace@example.com',
      role: 'member',
      status: 'pending',
      invitedBy: 'ada',
      respondedAt: null,
    });
    const days = (Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);
    // Only the hash of the token is stored.
    const { rows } = await db.query('select token_hash from invitations where id = $1', [invitation.id]);
    expect(rows[0].token_hash).toHaveLength(32);
    expect(rows[0].token_hash.toString('utf8')).not.toContain(invitation.acceptToken);

    const pending = await sdk.listInvitations({ client: ada.client, path: { org: 'acme' } });
    expect(pending.data?.items.map((i) => i.id)).toEqual([invitation.id]);
    expect(pending.data?.items[0]).not.toHaveProperty('acceptToken');

    const accepted = await sdk.acceptInvitation({
      client: grace.client,
      body: { token: invitation.acceptToken },
    });
    expect(accepted.response.status).toBe(200);
    expect(accepted.data).toMatchObject({ handle: 'acme', role: 'member' });

    expect(await members('acme')).toEqual([
      ['ada', 'admin'],
      ['grace', 'member'],
    ]);
    const seenByGrace = await sdk.listMembers({ client: grace.client, path: { org: 'acme' } });
    expect(seenByGrace.data?.items.find((m) => m.user === 'grace')).toMatchObject({
      displayName: 'grace',
      role: 'member',
    });
    expect(await invitationStatus(invitation.id)).toBe('accepted');
    const acceptedList = await sdk.listInvitations({
      client: ada.client,
      path: { org: 'acme' },
      query: { status: 'accepted' },
    });
    expect(acceptedList.data?.items[0]).toMatchObject({ id: invitation.id, status: 'accepted' });
    expect(acceptedList.data?.items[0]?.respondedAt).not.toBeNull();

    const again = await sdk.acceptInvitation({ client: bob.client, body: { token: invitation.acceptToken } });
    expect(again.response.status).toBe(409);
    expect(await members('acme')).toHaveLength(2);

    // The acceptance is audited on the organization's account, although the call named no account.
    const { rows: events } = await db.query(
      `select actor_user_id from audit_events where action = 'invitation.accept' and account_id = $1`,
      [org.id],
    );
    expect(events).toEqual([{ actor_user_id: grace.userId }]);
    expect(await auditCount('invitation.create', invitation.id)).toBe(1);
  });

  it('lets a person whose verified e-mail has a Unicode domain accept an invitation to its ASCII form', async () => {
    // Sign-ins store the ASCII form, and a migration rewrote older rows; an instance of the release before
    // it still writes the Unicode form during a rolling upgrade, after the migration ran.
    const uma = await createTestUser(service, 'uma');
    await db.query(`update identities set email = 'uma@bücher.example' where user_id = $1`, [uma.userId]);
    await createOrg('buecher');
    const invitation = await invite('buecher', 'uma@xn--bcher-kva.example');
    const accepted = await sdk.acceptInvitation({
      client: uma.client,
      body: { token: invitation.acceptToken },
    });
    expect(accepted.response.status).toBe(200);
    expect(await members('buecher')).toContainEqual(['uma', 'member']);
  });

  it('answers 404 to a non-member of a private organization, 403 to a member who invites, 403 without the scope', async () => {
    await createOrg('guarded');
    const member = await invite('guarded', 'grace@example.com');
    await sdk.acceptInvitation({ client: grace.client, body: { token: member.acceptToken } });

    for (const result of [
      await sdk.listMembers({ client: bob.client, path: { org: 'guarded' } }),
      await sdk.listInvitations({ client: bob.client, path: { org: 'guarded' } }),
      await sdk.createInvitation({
        client: bob.client,
        path: { org: 'guarded' },
        body: { email: 'b@example.com' },
      }),
      await sdk.updateMember({
        client: bob.client,
        path: { org: 'guarded', user: 'ada' },
        body: { role: 'member' },
      }),
    ]) {
      expect(result.response.status).toBe(404);
    }

    // A member sees the organization, so a write they may not do is 403, not 404.
    const byMember = await sdk.createInvitation({
      client: grace.client,
      path: { org: 'guarded' },
      body: { email: 'friend@example.com' },
    });
    expect(byMember.response.status).toBe(403);
    const promoteSelf = await sdk.updateMember({
      client: grace.client,
      path: { org: 'guarded', user: 'grace' },
      body: { role: 'admin' },
    });
    expect(promoteSelf.response.status).toBe(403);
    expect(
      (await sdk.listInvitations({ client: grace.client, path: { org: 'guarded' } })).response.status,
    ).toBe(200);

    const noWrite = await createTestUser(service, 'no-members-write', ['members:read']);
    const denied = await sdk.createInvitation({
      client: noWrite.client,
      path: { org: 'guarded' },
      body: { email: 'x@example.com' },
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain(
      'error="insufficient_scope", scope="members:write"',
    );

    const invitations = await sdk.listInvitations({ client: ada.client, path: { org: 'guarded' } });
    expect(invitations.data?.items).toEqual([]);
    expect(await members('guarded')).toEqual([
      ['ada', 'admin'],
      ['grace', 'member'],
    ]);
  });

  it('refuses to demote or remove the last admin (409) and changes nothing', async () => {
    await createOrg('solo');
    const demote = await sdk.updateMember({
      client: ada.client,
      path: { org: 'solo', user: 'ada' },
      body: { role: 'member' },
    });
    expect(demote.response.status).toBe(409);
    expect(demote.error?.detail).toMatch(/last admin/);
    const leave = await sdk.removeMember({ client: ada.client, path: { org: 'solo', user: 'ada' } });
    expect(leave.response.status).toBe(409);
    expect(await members('solo')).toEqual([['ada', 'admin']]);

    // With a second admin, the first may step down.
    const invitation = await invite('solo', 'grace@example.com');
    await sdk.acceptInvitation({ client: grace.client, body: { token: invitation.acceptToken } });
    const promoted = await sdk.updateMember({
      client: ada.client,
      path: { org: 'solo', user: 'grace' },
      body: { role: 'admin' },
    });
    expect(promoted.data).toMatchObject({ user: 'grace', role: 'admin' });
    const stepDown = await sdk.updateMember({
      client: ada.client,
      path: { org: 'solo', user: 'ada' },
      body: { role: 'member' },
    });
    expect(stepDown.data).toMatchObject({ user: 'ada', role: 'member' });
    const graceLeaves = await sdk.removeMember({
      client: grace.client,
      path: { org: 'solo', user: 'grace' },
    });
    expect(graceLeaves.response.status).toBe(409);
    const events = await db.query(
      `select e.details from audit_events e join accounts a on a.id = e.account_id
        where e.action = 'member.update' and a.handle = 'solo' order by e.occurred_at, e.id`,
    );
    expect(events.rows.map((r) => [r.details.user, r.details.to])).toEqual([
      ['grace', 'admin'],
      ['ada', 'member'],
    ]);
  });

  it('rejects invalid member changes with 400 and unknown members with 404, changing nothing', async () => {
    await createOrg('strict');
    const badRole = await sdk.updateMember({
      client: ada.client,
      path: { org: 'strict', user: 'ada' },
      body: { role: 'owner' } as never,
    });
    expect(badRole.response.status).toBe(400);
    expect(badRole.error?.errors?.[0]?.pointer).toBe('/body/role');
    const extra = await sdk.updateMember({
      client: ada.client,
      path: { org: 'strict', user: 'ada' },
      body: { role: 'member', note: 'x' } as never,
    });
    expect(extra.response.status).toBe(400);
    const badHandle = await sdk.removeMember({
      client: ada.client,
      path: { org: 'strict', user: 'Not A Handle' },
    });
    expect(badHandle.response.status).toBe(400);
    const stranger = await sdk.removeMember({ client: ada.client, path: { org: 'strict', user: 'bob' } });
    expect(stranger.response.status).toBe(404);
    expect(await members('strict')).toEqual([['ada', 'admin']]);
  });

  it('removes a member and revokes their tokens for the organization', async () => {
    const org = await createOrg('tidy');
    const invitation = await invite('tidy', 'bob@example.com', 'admin');
    await sdk.acceptInvitation({ client: bob.client, body: { token: invitation.acceptToken } });
    const tokenId = await insertOrganizationToken(org.id, bob.userId);

    const removed = await sdk.removeMember({ client: ada.client, path: { org: 'tidy', user: 'bob' } });
    expect(removed.response.status).toBe(204);
    expect(await members('tidy')).toEqual([['ada', 'admin']]);
    const token = await db.query('select revoked_at from account_tokens where id = $1', [tokenId]);
    expect(token.rows[0].revoked_at).not.toBeNull();
    expect((await sdk.getOrganization({ client: bob.client, path: { org: 'tidy' } })).response.status).toBe(
      404,
    );
  });

  it('answers a duplicate or member invitation with 409 and invalid input with 400, storing nothing', async () => {
    await createOrg('busy');
    const first = await invite('busy', 'dup@example.com');
    const duplicate = await sdk.createInvitation({
      client: ada.client,
      path: { org: 'busy' },
      body: { email: 'DUP@example.com' },
    });
    expect(duplicate.response.status).toBe(409);
    const member = await sdk.createInvitation({
      client: ada.client,
      path: { org: 'busy' },
      body: { email: 'ada@example.com' },
    });
    expect(member.response.status).toBe(409);
    expect(member.error?.detail).toMatch(/already a member/);

    for (const body of [{ email: 'not-an-email' }, { email: 'x@example.com', role: 'owner' }, {}]) {
      const bad = await sdk.createInvitation({
        client: ada.client,
        path: { org: 'busy' },
        body: body as never,
      });
      expect(bad.response.status).toBe(400);
    }
    const all = await db.query(
      `select i.id from invitations i join organizations o on o.id = i.organization_id
        join accounts a on a.id = o.account_id where a.handle = 'busy'`,
    );
    expect(all.rows.map((r) => r.id)).toEqual([first.id]);
  });

  it('tells an existing member by a verified e-mail of theirs, not by the e-mail typed in a profile', async () => {
    await createOrg('typed');
    const invitation = await invite('typed', 'bob@example.com');
    await sdk.acceptInvitation({ client: bob.client, body: { token: invitation.acceptToken } });
    // Bob types someone else's address into his profile: it neither shields him nor blocks them.
    const typed = await sdk.updateCurrentUser({ client: bob.client, body: { email: 'newhire@example.com' } });
    expect(typed.response.status).toBe(200);
    try {
      const newcomer = await sdk.createInvitation({
        client: ada.client,
        path: { org: 'typed' },
        body: { email: 'newhire@example.com' },
      });
      expect(newcomer.response.status).toBe(201);
      const member = await sdk.createInvitation({
        client: ada.client,
        path: { org: 'typed' },
        body: { email: 'Bob@Example.com' },
      });
      expect(member.response.status).toBe(409);
      expect(member.error?.detail).toMatch(/already a member/);
    } finally {
      await sdk.updateCurrentUser({ client: bob.client, body: { email: 'bob@example.com' } });
    }
  });

  it("revokes an admin's pending invitations when they stop being an admin, removed or demoted", async () => {
    await createOrg('lapsing');
    const promoted = await invite('lapsing', 'grace@example.com', 'admin');
    await sdk.acceptInvitation({ client: grace.client, body: { token: promoted.acceptToken } });
    const sendAs = async (email: string) => {
      const sent = await sdk.createInvitation({
        client: grace.client,
        path: { org: 'lapsing' },
        body: { email, role: 'admin' },
      });
      expect(sent.response.status).toBe(201);
      return sent.data!;
    };
    // Grace, demoted: what she sent as an admin no longer lets anyone in.
    const beforeDemotion = await sendAs('bob@example.com');
    const demoted = await sdk.updateMember({
      client: ada.client,
      path: { org: 'lapsing', user: 'grace' },
      body: { role: 'member' },
    });
    expect(demoted.response.status).toBe(200);
    expect(await invitationStatus(beforeDemotion.id)).toBe('revoked');
    const refused = await sdk.acceptInvitation({
      client: bob.client,
      body: { token: beforeDemotion.acceptToken },
    });
    expect(refused.response.status).toBe(410);
    expect(await members('lapsing')).toEqual([
      ['ada', 'admin'],
      ['grace', 'member'],
    ]);

    // Admin again, then removed: the same.
    await sdk.updateMember({
      client: ada.client,
      path: { org: 'lapsing', user: 'grace' },
      body: { role: 'admin' },
    });
    const beforeRemoval = await sendAs('bob@example.com');
    const ownInvitation = await invite('lapsing', 'someone@example.com');
    const removed = await sdk.removeMember({ client: ada.client, path: { org: 'lapsing', user: 'grace' } });
    expect(removed.response.status).toBe(204);
    expect(await invitationStatus(beforeRemoval.id)).toBe('revoked');
    expect(await invitationStatus(ownInvitation.id)).toBe('pending'); // Ada's own stay
    const again = await sdk.acceptInvitation({
      client: bob.client,
      body: { token: beforeRemoval.acceptToken },
    });
    expect(again.response.status).toBe(410);
    expect(await members('lapsing')).toEqual([['ada', 'admin']]);
  });

  it('revokes idempotently; a revoked invitation cannot be accepted (410)', async () => {
    await createOrg('revoker');
    const invitation = await invite('revoker', 'late@example.com');
    for (let i = 0; i < 2; i++) {
      const revoked = await sdk.revokeInvitation({
        client: ada.client,
        path: { org: 'revoker', invitation: invitation.id },
      });
      expect(revoked.response.status).toBe(204);
    }
    expect(await invitationStatus(invitation.id)).toBe('revoked');
    expect(await auditCount('invitation.revoke', invitation.id)).toBe(1);

    const accept = await sdk.acceptInvitation({
      client: bob.client,
      body: { token: invitation.acceptToken },
    });
    expect(accept.response.status).toBe(410);
    expect(accept.response.headers.get('content-type')).toContain('application/problem+json');
    expect(await invitationStatus(invitation.id)).toBe('revoked');

    // An accepted invitation stays accepted when revoked.
    const kept = await invite('revoker', 'grace@example.com');
    await sdk.acceptInvitation({ client: grace.client, body: { token: kept.acceptToken } });
    const noop = await sdk.revokeInvitation({
      client: ada.client,
      path: { org: 'revoker', invitation: kept.id },
    });
    expect(noop.response.status).toBe(204);
    expect(await invitationStatus(kept.id)).toBe('accepted');

    const unknown = await sdk.revokeInvitation({
      client: ada.client,
      path: { org: 'revoker', invitation: '0192f5c4-0000-7000-8000-000000000999' },
    });
    expect(unknown.response.status).toBe(404);
    const malformed = await sdk.revokeInvitation({
      client: ada.client,
      path: { org: 'revoker', invitation: 'nope' },
    });
    expect(malformed.response.status).toBe(400);

    const revokedList = await sdk.listInvitations({
      client: ada.client,
      path: { org: 'revoker' },
      query: { status: 'revoked' },
    });
    expect(revokedList.data?.items.map((i) => i.id)).toEqual([invitation.id]);
  });

  it('marks an expired invitation expired on accept (410) and lets the e-mail be invited again', async () => {
    await createOrg('timely');
    const old = await invite('timely', 'slow@example.com');
    await db.query(`update invitations set expires_at = now() - interval '1 minute' where id = $1`, [old.id]);

    const pending = await sdk.listInvitations({ client: ada.client, path: { org: 'timely' } });
    expect(pending.data?.items).toEqual([]);
    const expired = await sdk.listInvitations({
      client: ada.client,
      path: { org: 'timely' },
      query: { status: 'expired' },
    });
    expect(expired.data?.items.map((i) => [i.id, i.status])).toEqual([[old.id, 'expired']]);

    const accept = await sdk.acceptInvitation({ client: bob.client, body: { token: old.acceptToken } });
    expect(accept.response.status).toBe(410);
    expect(accept.error?.detail).toMatch(/expired/);
    expect(await invitationStatus(old.id)).toBe('expired');
    expect(await members('timely')).toEqual([['ada', 'admin']]);

    const fresh = await invite('timely', 'slow@example.com');
    expect(fresh.id).not.toBe(old.id);
  });

  it('declines an invitation, after which it cannot be accepted (409)', async () => {
    await createOrg('polite');
    const invitation = await invite('polite', 'bob@example.com');
    const declined = await sdk.declineInvitation({
      client: bob.client,
      body: { token: invitation.acceptToken },
    });
    expect(declined.response.status).toBe(204);
    expect(await invitationStatus(invitation.id)).toBe('declined');
    const accept = await sdk.acceptInvitation({
      client: bob.client,
      body: { token: invitation.acceptToken },
    });
    expect(accept.response.status).toBe(409);
    expect(await members('polite')).toEqual([['ada', 'admin']]);
    expect(await auditCount('invitation.decline', invitation.id)).toBe(1);
  });

  it('lets only the invited person accept: a verified e-mail must match, case-insensitively', async () => {
    await createOrg('open-door');
    const other = await invite('open-door', 'someone-else@example.com', 'admin');
    for (const call of [sdk.acceptInvitation, sdk.declineInvitation]) {
      const refused = await call({ client: bob.client, body: { token: other.acceptToken } });
      expect(refused.response.status).toBe(403);
      expect(refused.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect((refused.error as { detail: string }).detail).toContain('another e-mail address');
    }
    expect(await members('open-door')).toEqual([['ada', 'admin']]);

    const invitation = await invite('open-door', 'BOB@Example.com', 'admin');
    const accepted = await sdk.acceptInvitation({
      client: bob.client,
      body: { token: invitation.acceptToken },
    });
    expect(accepted.data).toMatchObject({ handle: 'open-door', role: 'admin' });
    expect(await members('open-door')).toEqual([
      ['ada', 'admin'],
      ['bob', 'admin'],
    ]);
    const twice = await sdk.acceptInvitation({ client: bob.client, body: { token: invitation.acceptToken } });
    expect(twice.response.status).toBe(409);
  });

  it('rejects malformed and unknown accept tokens, and anonymous callers', async () => {
    const dan = await createTestUser(service, 'dan');
    for (const body of [{}, { token: '' }, { token: 'x', extra: 1 }]) {
      const bad = await sdk.acceptInvitation({ client: dan.client, body: body as never });
      expect(bad.response.status).toBe(400);
    }
    const unknown = await sdk.acceptInvitation({ client: dan.client, body: { token: 'l10ninv_unknown' } });
    expect(unknown.response.status).toBe(404);
    const anonymous = await sdk.acceptInvitation({ client: sdkClient(service), body: { token: 'x' } });
    expect(anonymous.response.status).toBe(401);
    const { rows } = await db.query('select count(*)::int as n from memberships m where m.user_id = $1', [
      dan.userId,
    ]);
    expect(rows[0].n).toBe(0);
  });
  it('lets members and admins leave on their own, but never the last admin', async () => {
    const org = await createOrg('exit');
    for (const [who, role] of [
      [bob, 'member'],
      [grace, 'admin'],
    ] as const) {
      const invitation = await invite('exit', `${who.handle}@example.com`, role);
      await sdk.acceptInvitation({ client: who.client, body: { token: invitation.acceptToken } });
    }
    const tokenId = await insertOrganizationToken(org.id, bob.userId);

    const bobLeaves = await sdk.leaveOrganization({ client: bob.client, path: { org: 'exit' } });
    expect(bobLeaves.response.status).toBe(204);
    const token = await db.query('select revoked_at from account_tokens where id = $1', [tokenId]);
    expect(token.rows[0].revoked_at).not.toBeNull();
    expect((await sdk.getOrganization({ client: bob.client, path: { org: 'exit' } })).response.status).toBe(
      404,
    );
    const again = await sdk.leaveOrganization({ client: bob.client, path: { org: 'exit' } });
    expect(again.response.status).toBe(404);

    // Ada may go while Grace stays admin; then Grace is the last admin and must stay.
    expect((await sdk.leaveOrganization({ client: ada.client, path: { org: 'exit' } })).response.status).toBe(
      204,
    );
    const last = await sdk.leaveOrganization({ client: grace.client, path: { org: 'exit' } });
    expect(last.response.status).toBe(409);
    expect(last.error?.detail).toMatch(/last admin/);
    const left = await db.query(
      `select m.role, a.handle from memberships m join accounts a on a.user_id = m.user_id
        where m.organization_id = (select id from organizations where account_id = $1)`,
      [org.id],
    );
    expect(left.rows).toEqual([{ role: 'admin', handle: 'grace' }]);
    const events = await db.query(
      `select details->>'user' as who from audit_events where action = 'member.leave' and account_id = $1
        order by occurred_at, id`,
      [org.id],
    );
    expect(events.rows.map((r) => r.who)).toEqual(['bob', 'ada']);
  });

  it('answers leaving an organization you are not in with 404 and a malformed handle with 400', async () => {
    await createOrg('closed');
    const stranger = await sdk.leaveOrganization({ client: bob.client, path: { org: 'closed' } });
    expect(stranger.response.status).toBe(404);
    const personal = await sdk.leaveOrganization({ client: bob.client, path: { org: 'ada' } });
    expect(personal.response.status).toBe(404);
    const unknown = await sdk.leaveOrganization({ client: bob.client, path: { org: 'no-such-org' } });
    expect(unknown.response.status).toBe(404);
    const malformed = await sdk.leaveOrganization({ client: bob.client, path: { org: 'Not A Handle' } });
    expect(malformed.response.status).toBe(400);
    expect(await members('closed')).toEqual([['ada', 'admin']]);
  });
});
