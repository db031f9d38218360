import type { Connection } from '@mikro-orm/postgresql';
import type { Caller } from './caller.ts';
import type { Role } from './policy.ts';

/**
 * The caller's roles on one account, from the database, at request time (one indexed query at most; none
 * when the caller's membership role there was read with the account and is passed in).
 * A credential restricted to another account holds no role here at all, not even the public's: an
 * organization token is confined to its organization, so other accounts, public or not, do not exist for it.
 */
/** What role resolution needs to know of an account. */
export interface AccountFacts {
  id: string;
  kind: 'user' | 'organization';
  visibility: 'private' | 'public';
  /** The person whose personal account it is (null for an organization). */
  userId: string | null;
}

export async function resolveRoles(
  connection: Pick<Connection, 'execute'>,
  caller: Caller,
  account: AccountFacts,
  membershipRole?: 'admin' | 'member' | null,
): Promise<Set<Role>> {
  const roles = new Set<Role>();
  if (caller.restrictedToAccountId && caller.restrictedToAccountId !== account.id) return roles;
  if (account.visibility === 'public') roles.add('public_account');
  if (account.kind === 'user') {
    if (account.userId === caller.userId) roles.add('self');
    return roles;
  }
  const role =
    membershipRole !== undefined
      ? membershipRole
      : (
          await connection.execute<{ role: 'admin' | 'member' }[]>(
            `select m.role from memberships m join organizations o on o.id = m.organization_id
              where o.account_id = ? and m.user_id = ?`,
            [account.id, caller.userId],
          )
        )[0]?.role;
  if (role === 'admin') roles.add('organization_admin');
  if (role === 'member') roles.add('organization_member');
  return roles;
}
