import type { EntityManager } from '@mikro-orm/postgresql';
import { generateAccountToken } from '../authz/account-tokens.ts';
import type { Scope } from '../authz/scopes.ts';
import { AccountToken, type IAccount, type IAccountToken } from '../db/entities/index.ts';

/** Stores a new account token and returns it with its secret, which exists only in this return value. */
export function issueAccountToken(
  em: EntityManager,
  input: {
    account: IAccount;
    createdById: string;
    name: string;
    description?: string;
    scopes: Scope[];
    expiresAt?: Date | null;
  },
): { row: IAccountToken; secret: string } {
  const { token, hash, visiblePrefix } = generateAccountToken();
  const row = em.create(AccountToken, {
    account: input.account,
    createdBy: input.createdById,
    name: input.name,
    description: input.description ?? '',
    scopes: [...new Set(input.scopes)].sort(),
    tokenPrefix: visiblePrefix,
    tokenHash: hash,
    expiresAt: input.expiresAt ?? null,
  });
  return { row, secret: token };
}
