import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import {
  AccountToken,
  type IOrganization,
  Membership,
  Organization,
  type OrgRole,
} from '../../db/entities/index.ts';
import { page, pageRequest } from '../pagination.ts';
import type { Handlers, OperationContext, PlainStatement } from '../pipeline.ts';
import { problems } from '../problem.ts';
import { findOrganization, noOrganization } from './organizations.ts';

interface MemberRow {
  id: string;
  user_id: string;
  handle: string;
  display_name: string;
  role: OrgRole;
  created_at: Date;
}

/** Members with their personal account handle, in one query; keyset-paginated on the membership id. */
/** An organization by its id, or by its account's id (a read that needs no organization entity). */
type OrganizationKey = { id: string } | { accountId: string };

function memberRows(
  sql: PlainStatement,
  organization: OrganizationKey,
  filter: { afterId?: string; limit?: number; handle?: string; userId?: string },
): Promise<MemberRow[]> {
  const byId = 'id' in organization;
  return sql<MemberRow[]>(
    `select m.id, m.user_id, a.handle, u.display_name, m.role, m.created_at
       from memberships m
       join users u on u.id = m.user_id
       join accounts a on a.user_id = m.user_id
      where m.organization_id = ${byId ? '?' : '(select id from organizations where account_id = ?)'}
        and (?::uuid is null or m.id > ?::uuid)
        and (?::text is null or a.handle = ?::text)
        and (?::uuid is null or m.user_id = ?::uuid)
      order by m.id asc limit ?`,
    [
      byId ? organization.id : organization.accountId,
      filter.afterId ?? null,
      filter.afterId ?? null,
      filter.handle ?? null,
      filter.handle ?? null,
      filter.userId ?? null,
      filter.userId ?? null,
      filter.limit ?? 1,
    ],
  );
}

function serializeMember(row: MemberRow): Schemas.Member {
  return {
    user: row.handle,
    displayName: row.display_name,
    role: row.role,
    since: new Date(row.created_at).toISOString(),
  };
}

/** The membership named by the `{user}` path parameter (a personal account handle), or 404. */
async function findMember(op: OperationContext, organization: IOrganization) {
  const [row] = await memberRows(op.sql, organization, { handle: op.params.user });
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
 * Ends a membership, whether an admin removes it or the member leaves: never the last admin, and the
 * member's tokens for the organization are revoked with it.
 */
async function endMembership(
  op: OperationContext,
  organization: IOrganization,
  row: MemberRow,
  auditAction: 'member.remove' | 'member.leave',
) {
  if (row.role === 'admin') await assertAnotherAdmin(op, organization, 'remove');
  await op.em.nativeDelete(Membership, { id: row.id });
  // Roles are resolved per request, so the removed member's organization tokens already stop working;
  // revoking them keeps them dead if the user is ever invited back.
  const tokens = await op.em.nativeUpdate(
    AccountToken,
    { account: organization.account.id, createdBy: row.user_id, revokedAt: null },
    { revokedAt: new Date() },
  );
  op.audit(
    auditAction,
    'membership',
    row.id,
    { user: row.handle, role: row.role, revokedTokens: tokens },
    organization.account,
  );
  await op.em.flush();
}

export const memberHandlers = {
  async listMembers(op) {
    const { kind, accountId, handle } = op.target!;
    if (kind !== 'organization') throw noOrganization(handle);
    const request = pageRequest(op.query);
    const rows = await memberRows(
      op.sql,
      { accountId },
      {
        afterId: request.afterId,
        limit: request.limit + 1,
      },
    );
    return { status: 200, body: page(rows, request, serializeMember) };
  },

  async updateMember(op) {
    const organization = await findOrganization(op);
    const row = await findMember(op, organization);
    const role = op.body.role as OrgRole;
    if (row.role !== role) {
      if (row.role === 'admin') await assertAnotherAdmin(op, organization, 'demote');
      await op.em.nativeUpdate(Membership, { id: row.id }, { role, updatedAt: new Date() });
      op.audit('member.update', 'membership', row.id, { user: row.handle, from: row.role, to: role });
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
    const [row] = organization ? await memberRows(op.sql, organization, { userId: op.caller.userId }) : [];
    if (!organization || !row) throw problems.notFound(`You are not a member of "${handle}".`);
    await endMembership(op, organization, row, 'member.leave');
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
