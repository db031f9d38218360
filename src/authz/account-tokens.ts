import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { prepared, type RunPrepared } from '../db/prepared.ts';
import type { Caller } from './caller.ts';
import { isScope, type Scope } from './scopes.ts';

// Format: l10n_<32 base62 random chars: ~190 bits><6 base62 chars: CRC-32 of the random part>.
// The fixed prefix and the checksum let secret scanners recognise a leaked token offline, without
// asking us, and reject random strings that merely look like one.
export const TOKEN_PREFIX = 'l10n_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const TOKEN_PATTERN = /^l10n_[0-9A-Za-z]{38}$/;
/** Visible to the owner (lists, audit) to tell tokens apart; 7 random characters are not enough to guess it. */
const VISIBLE_PREFIX_LENGTH = TOKEN_PREFIX.length + 7;
/** Last-used time is written at most this often per token, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

function base62(bytes: Buffer, length: number): string {
  let out = '';
  for (const byte of bytes) {
    // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
    if (byte < 248) out += BASE62[byte % 62];
    if (out.length === length) return out;
  }
  return out + base62(randomBytes(length), length - out.length);
}

function encodeChecksum(value: number): string {
  let out = '';
  let n = value >>> 0;
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function hashToken(token: string): Buffer {
  return hash('sha256', token, 'buffer');
}

/** A new token; the caller stores only `hash` and `visiblePrefix`, and shows `token` once. */
export function generateAccountToken(): { token: string; hash: Buffer; visiblePrefix: string } {
  const secret = base62(randomBytes(48), SECRET_LENGTH);
  const token = `${TOKEN_PREFIX}${secret}${encodeChecksum(crc32(secret))}`;
  return { token, hash: hashToken(token), visiblePrefix: token.slice(0, VISIBLE_PREFIX_LENGTH) };
}

/** Offline check: right shape and a checksum that matches. Says nothing about validity on the server. */
export function looksLikeAccountToken(token: string): boolean {
  if (!TOKEN_PATTERN.test(token)) return false;
  const secret = token.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + SECRET_LENGTH);
  return token.slice(-CHECKSUM_LENGTH) === encodeChecksum(crc32(secret));
}

/** An account token by its hash, with what decides whether it still works (its account, its app's grant). */
const TOKEN_BY_HASH = prepared(
  `select t.id, t.token_hash, t.scopes, t.created_by_id, t.expires_at, t.revoked_at, t.last_used_at,
          t.oauth_grant_id, g.id is not null as grant_found, g.expires_at as grant_expires_at,
          a.id as account_id, a.kind as account_kind
     from account_tokens t join accounts a on a.id = t.account_id
     left join oidc_models g on g.model = 'Grant' and g.id = t.oauth_grant_id
    where t.token_hash = ?`,
);
const MARK_USED = prepared('update account_tokens set last_used_at = ? where id = ?');

/**
 * Verifies an account token: found by its hash (the hash is the unique key, so the lookup is an index
 * probe and no secret is compared in SQL), compared again in constant time, not revoked, not expired,
 * and, when an OAuth app created it, that app's grant still there (not disconnected, replayed or expired).
 * Prepared, on the pool: every request with a token the verified-caller cache does not hold comes here,
 * and any revocation anywhere empties that cache on every instance.
 */
export async function verifyAccountToken(
  runPrepared: RunPrepared,
  token: string,
  now = new Date(),
): Promise<Caller | null> {
  if (!looksLikeAccountToken(token)) return null;
  const hash = hashToken(token);
  const [row] = await runPrepared<TokenRow>(TOKEN_BY_HASH, [hash]);
  if (!row || !timingSafeEqual(row.token_hash, hash)) return null;
  if (row.revoked_at || (row.expires_at && new Date(row.expires_at) <= now)) return null;
  if (row.oauth_grant_id && !row.grant_found) return null;
  const expiresAt = earliest(row.expires_at, row.oauth_grant_id ? row.grant_expires_at : null);
  if (expiresAt && expiresAt <= now) return null;
  if (!row.last_used_at || now.getTime() - new Date(row.last_used_at).getTime() > LAST_USED_RESOLUTION_MS) {
    await runPrepared(MARK_USED, [now, row.id]);
  }
  const scopes = new Set(row.scopes.filter(isScope) as Scope[]);
  return {
    userId: row.created_by_id,
    scopes,
    restrictedToAccountId: row.account_kind === 'organization' ? row.account_id : undefined,
    expiresAt,
    validUntil: expiresAt,
    oauthGrantId: row.oauth_grant_id ?? undefined,
    credential: { kind: 'account_token', tokenId: row.id, accountId: row.account_id },
  };
}

function earliest(...dates: (Date | string | null)[]): Date | undefined {
  const times = dates.filter((d) => d !== null).map((d) => new Date(d).getTime());
  return times.length > 0 ? new Date(Math.min(...times)) : undefined;
}

interface TokenRow {
  id: string;
  token_hash: Buffer;
  scopes: string[];
  created_by_id: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  oauth_grant_id: string | null;
  grant_found: boolean;
  grant_expires_at: Date | null;
  account_id: string;
  account_kind: 'user' | 'organization';
}
