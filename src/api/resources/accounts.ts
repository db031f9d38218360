import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import type { Role } from '../../authz/policy.ts';
import type { IAccount } from '../../db/entities/index.ts';
import { callerListOwner, page, pageRequest } from '../pagination.ts';
import type { Handlers, PlainStatement } from '../pipeline.ts';

const ROLE_STRENGTH: Role[] = ['self', 'organization_admin', 'organization_member', 'public_account'];

function strongestRole(roles: Set<Role>): Role | null {
  return ROLE_STRENGTH.find((r) => roles.has(r)) ?? null;
}

function serializeAccount(account: IAccount, role: Role | null): Schemas.Account {
  return {
    id: account.id,
    handle: account.handle,
    kind: account.kind,
    displayName: account.displayName,
    visibility: account.visibility,
    role,
    createdAt: account.createdAt.toISOString(),
  };
}

interface AccessibleAccountRow {
  id: string;
  handle: string;
  kind: 'user' | 'organization';
  display_name: string;
  visibility: 'private' | 'public';
  created_at: Date;
  role: Role;
}

/** The caller's personal account and their organizations' accounts, in one query, keyset-paginated. */
async function accessibleAccounts(
  sql: PlainStatement,
  userId: string,
  restrictedTo: string | undefined,
  afterId: string | undefined,
  limit: number,
): Promise<AccessibleAccountRow[]> {
  return sql<AccessibleAccountRow[]>(
    `select * from (
       select a.id, a.handle, a.kind, a.display_name, a.visibility, a.created_at, 'self' as role
         from accounts a where a.user_id = ?
       union all
       select a.id, a.handle, a.kind, a.display_name, a.visibility, a.created_at,
              case m.role when 'admin' then 'organization_admin' else 'organization_member' end
         from memberships m
         join organizations o on o.id = m.organization_id
         join accounts a on a.id = o.account_id
        where m.user_id = ?
     ) t
     where (?::uuid is null or t.id > ?::uuid) and (?::uuid is null or t.id = ?::uuid)
     order by t.id asc limit ?`,
    [userId, userId, afterId ?? null, afterId ?? null, restrictedTo ?? null, restrictedTo ?? null, limit],
  );
}

export const accountHandlers = {
  async listAccounts(op) {
    // A token bound to one organization sees a list of its own, with cursors of its own.
    const request = pageRequest(op.query, 'accounts', callerListOwner(op.caller));
    const rows = await accessibleAccounts(
      op.sql,
      op.caller.userId,
      op.caller.restrictedToAccountId,
      request.afterId,
      request.limit + 1,
    );
    const body = page(rows, request, (row) => ({
      id: row.id,
      handle: row.handle,
      kind: row.kind,
      displayName: row.display_name,
      visibility: row.visibility,
      role: row.role,
      createdAt: new Date(row.created_at).toISOString(),
    }));
    return { status: 200, body };
  },

  async getAccount(op) {
    const target = op.target!;
    return { status: 200, body: serializeAccount(target.account, strongestRole(target.roles)) };
  },
} satisfies Partial<Handlers>;
