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
