// Parallel refreshes with one refresh token converge on one successor. The first request to present a
// refresh token rotates it; any other request presenting the same token within the grace period (a client
// that refreshed twice at once, or retried after a lost answer) gets a fresh access token and that same
// successor instead of a new one, so one token never forks into parallel chains. After the grace period
// the old token is a replay and oidc-provider revokes the whole grant (every token issued under it).
import { setTimeout as sleep } from 'node:timers/promises';
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Orm } from '../db/orm.ts';
import type { FieldCipher } from '../lib/field-encryption.ts';
import { storageKey } from './adapter.ts';

/** How long a request that lost the race waits for the winner to store the successor. */
const SUCCESSOR_WAIT_MS = 3000;
const SUCCESSOR_POLL_MS = 20;

/** Where the successor is kept on the rotated token's row: encrypted, bound to that row. */
const SUCCESSOR_FIELD = 'successor_encrypted';

export interface RefreshGrace {
  /**
   * Called by oidc-provider's rotateRefreshToken hook: true when this request is the first to present the
   * token and rotates it; false when another request already did, in which case this one will hand out the
   * stored successor (see `middleware`). Refuses (invalid_grant) when no successor appears in time.
   */
  claim(koa: KoaContextWithOIDC): Promise<boolean>;
  /** provider.use(): stores the successor a rotation produced, or puts it into a parallel request's answer. */
  middleware(koa: KoaContextWithOIDC, next: () => Promise<void>): Promise<void>;
  /**
   * For the adapter's consume(): true, once, when claim() won this token's rotation moments ago (its update
   * already set consumed_at), so the rotation sends that update once instead of twice.
   */
  consumedByClaim(key: string): boolean;
}

export function createRefreshGrace(orm: Orm, cipher: FieldCipher): RefreshGrace {
  const db = () => orm.em.getConnection();
  const successors = new WeakMap<KoaContextWithOIDC, string>();
  // oidc-provider calls consume() right after a claim that returned true; an entry that somehow is never
  // taken is dropped at the next claim after a minute, so the set cannot grow.
  const claimed = new Map<string, number>();
  const keyOf = (value: string) => storageKey('RefreshToken', value);
  const aad = (key: string) => `oidc-refresh-successor:${key}`;

  async function storedSuccessor(key: string): Promise<string | undefined> {
    const rows = await db().execute<{ successor: string | null }[]>(
      `select payload->>'${SUCCESSOR_FIELD}' as successor from oidc_models where model = 'RefreshToken' and id = ?`,
      [key],
    );
    const sealed = rows[0]?.successor;
    return sealed ? cipher.decrypt(Buffer.from(sealed, 'base64'), aad(key)) : undefined;
  }

  return {
    async claim(koa) {
      const value = String(koa.oidc.params?.refresh_token);
      const key = keyOf(value);
      // The same conditional update the adapter's consume() runs: exactly one request wins it.
      const won = await db().execute<{ affectedRows: number }>(
        `update oidc_models set consumed_at = now() where model = 'RefreshToken' and id = ? and consumed_at is null`,
        [key],
        'run',
      );
      if (won.affectedRows === 1) {
        const now = Date.now();
        for (const [stale, at] of claimed) if (now - at > 60_000) claimed.delete(stale);
        claimed.set(key, now);
        return true;
      }
      const deadline = Date.now() + SUCCESSOR_WAIT_MS;
      for (;;) {
        const successor = await storedSuccessor(key);
        if (successor) {
          successors.set(koa, successor);
          return false;
        }
        if (Date.now() > deadline) throw new errors.InvalidGrant('refresh token already used');
        await sleep(SUCCESSOR_POLL_MS);
      }
    },

    consumedByClaim(key) {
      return claimed.delete(key);
    },

    async middleware(koa, next) {
      await next();
      if (koa.oidc?.route !== 'token' || koa.status !== 200) return;
      const body = koa.body as { refresh_token?: unknown } | undefined;
      if (!body || typeof body.refresh_token !== 'string') return;
      const successor = successors.get(koa);
      if (successor) {
        body.refresh_token = successor;
        return;
      }
      if (!koa.oidc.entities.RotatedRefreshToken) return;
      const key = keyOf(String(koa.oidc.params?.refresh_token));
      const sealed = cipher.encrypt(body.refresh_token, aad(key)).toString('base64');
      await db().execute(
        `update oidc_models set payload = payload || jsonb_build_object('${SUCCESSOR_FIELD}', ?::text)
         where model = 'RefreshToken' and id = ?`,
        [sealed, key],
        'run',
      );
    },
  };
}
