// Parallel refreshes with one refresh token converge on one successor. The first request to present a
// refresh token rotates it; any other request presenting the same token within the grace period (a client
// that refreshed twice at once, or retried after a lost answer) gets a fresh access token and that same
// successor instead of a new one, so one token never forks into parallel chains. After the grace period
// the old token is a replay and oidc-provider revokes the whole grant (every token issued under it).
//
// A rotation is one write statement: the claim on the old token (the conditional update exactly one request
// wins), its encrypted successor, the new refresh token and the access token. oidc-provider saves the new
// refresh token and then the access token; the first is held back until the second, and both go with the
// claim. So a rotation commits whole or not at all (a failure in between leaves the old token unconsumed and
// stores nothing), a claimed token always carries its successor, and a request that loses the claim finds
// the successor the moment it can see the claim.
import { setTimeout as sleep } from 'node:timers/promises';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Orm } from '../db/orm.ts';
import { type PreparedStatement, prepared, type RunPrepared } from '../db/prepared.ts';
import type { FieldCipher } from '../lib/field-encryption.ts';
import {
  INSERT_COLUMNS,
  type PendingRow,
  ROW_PLACEHOLDERS,
  type RotationWrites,
  rowParams,
  SUCCESSOR_PAYLOAD_FIELD,
  storageKey,
} from './adapter.ts';

/**
 * How long a request that lost the claim waits for the successor. The claim and the successor commit
 * together, so it is there at once; waiting covers a token claimed by an instance of the previous release
 * (which stored the successor after the claim) during a rolling deployment.
 */
const SUCCESSOR_WAIT_MS = 3000;
const SUCCESSOR_POLL_MS = 20;

/**
 * Where the successor is kept on the rotated token's row, encrypted and bound to that row: a column of its
 * own, so that the rotation sets two columns no index reads and PostgreSQL updates the row in place. Tokens
 * rotated by an earlier release (and by an instance of it during a rolling deployment) have it in the payload.
 */
const SUCCESSOR_COLUMN = 'successor_encrypted';

interface Rotation {
  /** Storage key of the refresh token being rotated. */
  rotatedKey: string;
  /** The new refresh token's row, held until the access token's. */
  successor?: PendingRow;
  settled: boolean;
  /** When another request had rotated the token: its successor, for this answer. */
  handOut?: string;
}

export interface RefreshGrace extends RotationWrites {
  /**
   * Called by oidc-provider's rotateRefreshToken hook: always rotate. Whether this request or a parallel
   * one rotates is decided when the rotation is written (see `take`); a request that loses hands out the
   * stored successor instead (see `middleware`).
   */
  claim(koa: KoaContextWithOIDC): boolean;
  /** provider.use(): puts a parallel request's successor into the answer. */
  middleware(koa: KoaContextWithOIDC, next: () => Promise<void>): Promise<void>;
}

/**
 * The rotation in one statement, its own commit: claim the old token (exactly one request wins the
 * conditional update) with its encrypted successor, and insert the new refresh token (and the access token,
 * when oidc-provider saved one) only if the claim was won. Prepared: it runs on every refresh.
 */
function rotationStatement(rowCount: number): PreparedStatement {
  return prepared(`with claim as (
       update oidc_models set consumed_at = now(), ${SUCCESSOR_COLUMN} = ?
       where model = 'RefreshToken' and id = ? and consumed_at is null
       returning id
     ), issued as (
       insert into oidc_models ${INSERT_COLUMNS}
       select * from (values ${Array(rowCount).fill(ROW_PLACEHOLDERS).join(', ')}) as v
       where exists (select 1 from claim)
     )
     select count(*)::int as won from claim`);
}
const ROTATION = rotationStatement(1);
const ROTATION_WITH_ACCESS = rotationStatement(2);

export function createRefreshGrace(orm: Orm, cipher: FieldCipher, runPrepared: RunPrepared): RefreshGrace {
  const db = () => orm.em.getConnection();
  // Per request, keyed by oidc-provider's context object: nothing here outlives the request.
  const rotations = new WeakMap<KoaContextWithOIDC, Rotation>();
  const keyOf = (value: string) => storageKey('RefreshToken', value);
  const aad = (key: string) => `oidc-refresh-successor:${key}`;
  const current = () => {
    const koa = Provider.ctx;
    const rotation = koa && rotations.get(koa);
    return rotation && !rotation.settled ? rotation : undefined;
  };

  async function storedSuccessor(key: string): Promise<string | undefined> {
    const rows = await db().execute<{ successor: string | null }[]>(
      `select coalesce(${SUCCESSOR_COLUMN}, payload->>'${SUCCESSOR_PAYLOAD_FIELD}') as successor
       from oidc_models where model = 'RefreshToken' and id = ?`,
      [key],
    );
    const sealed = rows[0]?.successor;
    return sealed ? cipher.decrypt(Buffer.from(sealed, 'base64'), aad(key)) : undefined;
  }

  /** Writes the rotation (with the access token's row, when given); false when another request won it. */
  async function settle(rotation: Rotation, access?: PendingRow): Promise<boolean> {
    rotation.settled = true;
    const successor = rotation.successor!;
    const sealed = cipher.encrypt(successor.id, aad(rotation.rotatedKey)).toString('base64');
    const rows = access ? [successor, access] : [successor];
    const [result] = await runPrepared<{ won: number }>(access ? ROTATION_WITH_ACCESS : ROTATION, [
      sealed,
      rotation.rotatedKey,
      ...rows.flatMap(rowParams),
    ]);
    if (result?.won === 1) return true;
    // Another request claimed the token first (its statement has committed: ours waited on the row), or the
    // token was revoked meanwhile (no row, so no successor).
    const deadline = Date.now() + SUCCESSOR_WAIT_MS;
    for (;;) {
      const stored = await storedSuccessor(rotation.rotatedKey);
      if (stored) {
        rotation.handOut = stored;
        return false;
      }
      if (Date.now() > deadline) throw new errors.InvalidGrant('refresh token already used');
      await sleep(SUCCESSOR_POLL_MS);
    }
  }

  return {
    claim(koa) {
      rotations.set(koa, { rotatedKey: keyOf(String(koa.oidc.params?.refresh_token)), settled: false });
      return true;
    },

    defersConsume(key) {
      return current()?.rotatedKey === key;
    },

    async take(row) {
      const rotation = current();
      if (!rotation) return false;
      if (row.model === 'RefreshToken' && !rotation.successor) {
        rotation.successor = row;
        return true;
      }
      // A request that lost the claim still answers with a fresh access token: the adapter writes it.
      if (row.model === 'AccessToken' && rotation.successor) return settle(rotation, row);
      return false;
    },

    async middleware(koa, next) {
      await next();
      const rotation = rotations.get(koa);
      if (!rotation || koa.status !== 200) return;
      // oidc-provider saves the access token after the refresh token; should a version not, the held
      // refresh token is written here rather than handed out unstored.
      if (!rotation.settled && rotation.successor) await settle(rotation);
      const body = koa.body as { refresh_token?: unknown } | undefined;
      if (rotation.handOut && body && typeof body.refresh_token === 'string')
        body.refresh_token = rotation.handOut;
    },
  };
}
