import type { EntityManager } from '@mikro-orm/postgresql';
import { generateAccountToken } from '../authz/account-tokens.ts';
import { isScope, type Scope } from '../authz/scopes.ts';
import { isoTime, type PlainRow } from '../db/columns.ts';
import { AccountToken, type IAccount, type IAccountToken } from '../db/entities/index.ts';

const DAY_MS = 86_400_000;

/**
 * Limits of a new token, the same for every door. openapi.yaml (AccountTokenCreate) states them for the REST
 * API and MCP, the settings page validates its form with these; test/web/settings.test.ts checks they agree.
 */
export const TOKEN_LIMITS = {
  nameMaxLength: 100,
  descriptionMaxLength: 500,
  /** Tokens created by a person always expire; a leaked one stops working by itself. */
  defaultLifetimeDays: 90,
  minLifetimeDays: 1,
  maxLifetimeDays: 366,
} as const;

/** The expiry of a token created now with a lifetime of `days`. */
export function tokenExpiry(days: number, now = Date.now()): Date {
  return new Date(now + days * DAY_MS);
}

/**
 * The expiry of a token a credential creates: `days` when asked for, else the default lifetime; never after
 * the creating credential's own expiry (`parentExpiresAt`), so a token cannot outlive the one that made it.
 * An explicit lifetime beyond the parent is refused (the caller asked for something we will not do); the
 * default is shortened to the parent's expiry. Returns the longest lifetime allowed, in whole days, when refused.
 */
export function childTokenExpiry(
  days: number | undefined,
  parentExpiresAt: Date | undefined,
  now = Date.now(),
): { expiresAt: Date } | { refused: { maxDays: number; parentExpiresAt: Date } } {
  const wanted = tokenExpiry(days ?? TOKEN_LIMITS.defaultLifetimeDays, now);
  if (!parentExpiresAt || wanted <= parentExpiresAt) return { expiresAt: wanted };
  if (days === undefined) return { expiresAt: parentExpiresAt };
  return {
    refused: { maxDays: Math.floor((parentExpiresAt.getTime() - now) / DAY_MS), parentExpiresAt },
  };
}

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
    /** The OAuth grant of the app that created it, if one did: the token dies with that grant. */
    oauthGrantId?: string;
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
    oauthGrantId: input.oauthGrantId ?? null,
  });
  return { row, secret: token };
}

/** What a token's representation is made of: its own columns (the entity or a plain row). */
type TokenFields = Pick<
  IAccountToken,
  | 'id'
  | 'name'
  | 'description'
  | 'scopes'
  | 'tokenPrefix'
  | 'expiresAt'
  | 'lastUsedAt'
  | 'revokedAt'
  | 'createdAt'
>;

/** A token as a plain read of its columns answers it (timestamps as ISO 8601 text). */
export type TokenRow = PlainRow<TokenFields>;

function tokenStatus(token: TokenFields | TokenRow, now: Date): 'active' | 'expired' | 'revoked' {
  if (token.revokedAt) return 'revoked';
  if (token.expiresAt && new Date(token.expiresAt) <= now) return 'expired';
  return 'active';
}

const isoTimeOrNull = (value: Date | string | null | undefined) => (value ? isoTime(value) : null);

/** Never the secret or its hash: only what tells tokens apart and says what they can do. */
export function serializeToken(
  token: TokenFields | TokenRow,
  accountHandle: string,
  createdBy: string,
  now = new Date(),
) {
  return {
    id: token.id,
    account: accountHandle,
    name: token.name,
    description: token.description,
    // Stored scopes are the service's; one retired since is not reported as if it were still granted.
    scopes: token.scopes.filter(isScope),
    tokenPrefix: token.tokenPrefix,
    status: tokenStatus(token, now),
    expiresAt: isoTimeOrNull(token.expiresAt),
    lastUsedAt: isoTimeOrNull(token.lastUsedAt),
    revokedAt: isoTimeOrNull(token.revokedAt),
    createdAt: isoTime(token.createdAt),
    createdBy,
  };
}
