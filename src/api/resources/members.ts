import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { isoTimestamp } from '../../db/columns.ts';
import {
  AccountToken,
  Invitation,
  type IOrganization,
  Membership,
  Organization,
  type OrgRole,
} from '../../db/entities/index.ts';
import { keysetPages, page, pageRequest } from '../pagination.ts';
import type { Handlers, OperationContext, PlainStatement } from '../pipeline.ts';
import { problems } from '../problem.ts';
import { findOrganization, noOrganization, takeOrganizationTurn } from './organizations.ts';

interface MemberRow {
  id: string;
  user_id: string;
  handle: string;
  display_name: string;
  role: OrgRole;
  /** ISO 8601, as the API sends it. */
  created_at: string;
}

/** Members with their personal account handle, in one statement; keyset-paginated on the membership id. */
const MEMBERS = `select m.id, m.user_id, a.handle, u.display_name, m.role, ${isoTimestamp('m.created_at')} as created_at
   from memberships m
   join users u on u.id = m.user_id
   join accounts a on a.user_id = m.user_id`;

/** The members list's pages, by the organization's account id (the pipeline has it). */
const memberPage = keysetPages(
  `${MEMBERS} where m.organization_id = (select id from organizations where account_id = ?)`,
  'm.id',
);

/**
 * One member, by the personal account handle or by the user. A write reads it locked for update, and so
 * as it is once the writes before it committed: a membership removed meanwhile is not found (404), and a
 * role changed meanwhile is read as it is now, so two changes of one membership take turns instead of
 * both acting on what they read before either wrote.
 */
function findMemberRows(
  sql: PlainStatement,
  organization: IOrganization,
  filter: { handle: string } | { userId: string },
  forUpdate = false,
): Promise<MemberRow[]> {
  const [column, value] = 'handle' in filter ? ['a.handle', filter.handle] : ['m.user_id', filter.userId];
  return sql<MemberRow[]>(
    `${MEMBERS} where m.organization_id = ? and ${column} = ?${forUpdate ? ' for update of m' : ''}`,
    [organization.id, value],
  );
}

function serializeMember(row: MemberRow): Schemas.Member {
  return { user: row.handle, displayName: row.display_name, role: row.role, since: row.created_at };
}

/** The membership named by the `{user}` path parameter (a personal account handle), locked, or 404. */
async function findMember(op: OperationContext, organization: IOrganization) {
  const [row] = await findMemberRows(op.sql, organization, { handle: op.params.user! }, true);
  if (!row) {
    throw problems.notFound(`"${op.params.user}" is not a member of "${organization.account.handle}".`);
  }
  return row;
}

/**
 * Refuses to leave the organization without an admin. Locking the admin rows serializes two admins
 * demoting each other at once (the second sees the first's change); the memberships_last_admin trigger
 * backs this up at commit.
 */
async function assertAnotherAdmin(op: OperationContext, organization: IOrganization, doing: string) {
  const admins = await op.sql<unknown[]>(
    `select id from memberships where organization_id = ? and role = 'admin' for update`,
    [organization.id],
  );
  if (admins.length <= 1) {
    throw problems.conflict(
      `Cannot ${doing} the last admin of "${organization.account.handle}": make another member an admin first.`,
    );
  }
}

/**
 * An invitation carries its sender's authority: once they are no longer an admin of the organization
 * (removed, left or demoted), their pending invitations are revoked, or a removed admin could have sent one
 * to an address of their own beforehand and walk back in. Other admins invite anew. Returns how many.
 */
function revokeInvitationsSentBy(op: OperationContext, organization: IOrganization, row: MemberRow) {
  return op.em.nativeUpdate(
    Invitation,
    {
      organization: organization.id,
      invitedBy: row.user_id,
      status: 'pending',
      expiresAt: { $gt: new Date() },
    },
    { status: 'revoked', updatedAt: new Date() },
  );
}

/**
 * Ends a membership, whether an admin removes it or the member leaves: never the last admin, and the
 * member's tokens for the organization and pending invitations are revoked with it.
 */
async function endMembership(
  op: OperationContext,
  organization: IOrganization,
  row: MemberRow,
  auditAction: 'member.remove' | 'member.leave',
) {
  if (row.role === 'admin') await assertAnotherAdmin(op, organization, 'remove');
  // The row is locked (findMemberRows): a removal that raced this one waited and found nothing.
  await op.em.nativeDelete(Membership, { id: row.id });
  // Roles are resolved per request, so the removed member's organization tokens already stop working;
  // revoking them keeps them dead if the user is ever invited back.
  const tokens = await op.em.nativeUpdate(
    AccountToken,
    { account: organization.account.id, createdBy: row.user_id, revokedAt: null },
    { revokedAt: new Date() },
  );
  const invitations = row.role === 'admin' ? await revokeInvitationsSentBy(op, organization, row) : 0;
  op.audit(
    auditAction,
    'membership',
    row.id,
    { user: row.handle, role: row.role, revokedTokens: tokens, revokedInvitations: invitations },
    organization.account,
  );
  await op.em.flush();
}

export const memberHandlers = {
  async listMembers(op) {
    const { kind, accountId, handle } = op.target!;
    if (kind !== 'organization') throw noOrganization(handle);
    const request = pageRequest(op.query, 'members', accountId);
    const { statement, params } = memberPage(accountId, request);
    const rows = await op.sql<MemberRow[]>(statement, params);
    return { status: 200, body: page(rows, request, serializeMember) };
  },

  async updateMember(op) {
    const organization = await findOrganization(op);
    const row = await findMember(op, organization);
    const role = op.body.role as OrgRole;
    if (row.role !== role) {
      if (row.role === 'admin') await assertAnotherAdmin(op, organization, 'demote');
      await op.em.nativeUpdate(Membership, { id: row.id }, { role, updatedAt: new Date() });
      const invitations = row.role === 'admin' ? await revokeInvitationsSentBy(op, organization, row) : 0;
      op.audit('member.update', 'membership', row.id, {
        user: row.handle,
        from: row.role,
        to: role,
        ...(invitations > 0 ? { revokedInvitations: invitations } : {}),
      });
      await op.em.flush();
    }
    return { status: 200, body: serializeMember({ ...row, role }) };
  },

  async removeMember(op) {
    const organization = await findOrganization(op);
    await endMembership(op, organization, await findMember(op, organization), 'member.remove');
    return { status: 204 };
  },

  async leaveOrganization(op) {
    const handle = op.params.org!;
    const organization = await op.em.findOne(
      Organization,
      { account: { handle, kind: 'organization' } },
      { populate: ['account'] },
    );
    // Membership changes take their turn per organization first, as the pipeline has the others do
    // (holdMembership): leaving while an admin demotes you is then no deadlock.
    if (organization) await takeOrganizationTurn(op, organization.id);
    const [row] = organization
      ? await findMemberRows(op.sql, organization, { userId: op.caller.userId }, true)
      : [];
    if (!organization || !row) throw problems.notFound(`You are not a member of "${handle}".`);
    await endMembership(op, organization, row, 'member.leave');
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
