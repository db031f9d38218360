import type { EntityManager } from '@mikro-orm/postgresql';
import type { IAccount } from '../db/entities/index.ts';
import type { Caller } from './caller.ts';
import type { Policy, Role } from './policy.ts';
import type { Scope } from './scopes.ts';

/** Who creates a token: a bearer caller, or a person in a browser session (who holds every scope). */
export type TokenCreator = Pick<Caller, 'userId' | 'scopes'>;

/**
 * The roles a new token would act with. An organization token acts on its organization only: the creator's
 * roles there. A personal token acts wherever its user may act (see verifyAccountToken), so its ceiling is
 * everything the user holds: `self` plus their role in each organization. Limiting it to `self` would make
 * it impossible to create a personal token that manages members, while adding nothing: every request is
 * still checked against the user's role on its own target.
 */
async function rolesWhereTokenActs(
  em: EntityManager,
  caller: TokenCreator,
  target: { account: IAccount; roles: Set<Role> },
): Promise<Set<Role>> {
  const roles = new Set(target.roles);
  if (target.account.kind !== 'user') return roles;
  // On the request's own connection (its transaction's, for a write): a second connection of the pool
  // per request, held while the first waits, let a burst of token creations take the whole pool, each
  // waiting for one more until the connect bound (503s, and every other request stalled with them).
  const rows = await em.execute<{ role: 'admin' | 'member' }[]>(
    'select distinct role from memberships where user_id = ?',
    [caller.userId],
  );
  for (const { role } of rows) roles.add(role === 'admin' ? 'organization_admin' : 'organization_member');
  return roles;
}

/**
 * The requested scopes a new token may not carry because its creator does not hold them: each must be in
 * the creator's own token and allowed by the policy for the creator's roles where the token will act.
 */
export async function scopesBeyondCeiling(
  em: EntityManager,
  policy: Policy,
  caller: TokenCreator,
  target: { account: IAccount; roles: Set<Role> },
  requested: readonly Scope[],
): Promise<Scope[]> {
  const roles = await rolesWhereTokenActs(em, caller, target);
  return requested.filter((scope) => {
    const [object, action] = scope.split(':') as [string, string];
    return !caller.scopes.has(scope) || !policy.allows(roles, object, action);
  });
}
