import type { EntityManager } from '@mikro-orm/postgresql';
import { Account, type IAccount, type IUser, User } from '../db/entities/index.ts';

/** A user always comes with a personal account; this is the one place that creates both. */
export function createUserWithAccount(
  em: EntityManager,
  input: { handle: string; displayName: string; email?: string | null },
): { user: IUser; account: IAccount } {
  const user = em.create(User, { displayName: input.displayName, email: input.email ?? null });
  const account = em.create(Account, {
    kind: 'user',
    handle: input.handle,
    displayName: input.displayName,
    visibility: 'private',
    user,
  });
  return { user, account };
}

/** A user's personal account (every user has exactly one: createUserWithAccount). */
export function personalAccount(em: EntityManager, userId: string): Promise<IAccount> {
  return em.findOneOrFail(Account, { user: userId, kind: 'user' });
}

/** The API names a user by their personal account's handle; this maps user ids to handles in one query. */
export async function userHandles(
  em: EntityManager,
  userIds: Iterable<string | null | undefined>,
): Promise<Map<string, string>> {
  const ids = [...new Set([...userIds].filter((id): id is string => Boolean(id)))];
  if (ids.length === 0) return new Map();
  const accounts = await em.find(Account, { user: { $in: ids } }, { fields: ['handle', 'user'] });
  return new Map(accounts.map((account) => [account.user!.id, account.handle]));
}
