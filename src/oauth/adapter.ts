// oidc-provider's storage contract (clients, sessions, interactions, codes, grants, tokens) on one
// PostgreSQL table, `oidc_models`, so every instance sees the same state and a restart loses nothing.
import { hash } from 'node:crypto';
import type { Adapter, AdapterPayload, KoaContextWithOIDC } from 'oidc-provider';
import Provider, { errors } from 'oidc-provider';
import type { Orm } from '../db/orm.ts';
import { type PreparedStatement, prepared, type RunPrepared } from '../db/prepared.ts';
import type { FieldCipher } from '../lib/field-encryption.ts';

export interface AdapterOptions {
  orm: Orm;
  /** For the refresh grant's one read (prepared: it runs on every refresh). */
  runPrepared: RunPrepared;
  cipher: FieldCipher;
  /** Seconds during which a rotated refresh token still works, so parallel refreshes do not kill a grant. */
  refreshGraceSeconds: number;
  /** The refresh grant's rotation (refresh-grace.ts), which writes its claim and new tokens together. */
  rotation?: RotationWrites;
}

/** A row as the adapter would write it; `id` is oidc-provider's own id (for tokens, the secret itself). */
export interface PendingRow {
  model: string;
  id: string;
  key: string;
  json: string;
  grantId: string | null;
  userCode: string | null;
  uid: string | null;
  expiresIn: number;
}

export interface RotationWrites {
  /** True when the rotating request will set this refresh token's consumed_at in its own statement. */
  defersConsume(key: string): boolean;
  /** Takes a new token's row into the rotation's statement (true), or leaves it to the adapter (false). */
  take(row: PendingRow): Promise<boolean>;
}

/** The columns and one row's placeholders of an insert into oidc_models, in the order rowParams() gives. */
export const INSERT_COLUMNS = '(model, id, payload, grant_id, user_code, uid, expires_at)';
export const ROW_PLACEHOLDERS =
  '(?::text, ?::text, ?::jsonb, ?::text, ?::text, ?::text, case when ?::int > 0 then now() + make_interval(secs => ?::int) end)';

export function rowParams(row: PendingRow): unknown[] {
  return [row.model, row.key, row.json, row.grantId, row.userCode, row.uid, row.expiresIn, row.expiresIn];
}

interface Row {
  payload: AdapterPayload & { client_secret_encrypted?: string };
  consumed_at: Date | null;
}

interface ReadAheadRow {
  client_payload: Row['payload'] | null;
  client_consumed_at: Date | null;
  refresh_payload: Row['payload'] | null;
  refresh_consumed_at: Date | null;
  grant_id: string | null;
  grant_payload: Row['payload'] | null;
  grant_consumed_at: Date | null;
  account_id: string | null;
  account_exists: boolean;
}

/** Rows (null: known absent) and account existence read ahead for one request, by `model:key`. */
interface ReadAhead {
  rows: Map<string, Row | null>;
  accounts: Map<string, boolean>;
}

// Per request (oidc-provider's context object), so nothing outlives the request or is shared across
// requests: another instance never needs what is here.
const readAheads = new WeakMap<KoaContextWithOIDC, ReadAhead>();

function takeReadAhead(model: string, key: string): Row | null | undefined {
  const koa = Provider.ctx;
  const rows = koa && readAheads.get(koa)?.rows;
  const row = rows?.get(`${model}:${key}`);
  if (row !== undefined) rows!.delete(`${model}:${key}`);
  return row;
}

/** For findAccount: whether the refresh grant's read-ahead found this user (undefined: it did not look). */
export function readAheadAccount(koa: KoaContextWithOIDC, accountId: string): boolean | undefined {
  const accounts = readAheads.get(koa)?.accounts;
  const exists = accounts?.get(accountId);
  accounts?.delete(accountId);
  return exists;
}

/** Whether this request is the revocation endpoint revoking an access token (not a refresh token). */
function revokingAnAccessToken(): boolean {
  const koa = Provider.ctx;
  return koa?.oidc?.route === 'revocation' && koa.oidc.entities.AccessToken !== undefined;
}

const epoch = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * Models whose id is itself a bearer secret (the token or code a client presents).
 * They are stored under the SHA-256 of the id and without the `jti` copy in the payload, so a database
 * dump yields nothing that works; oidc-provider always looks them up by the value it was handed.
 */
const SECRET_ID_MODELS = new Set(['AccessToken', 'RefreshToken', 'AuthorizationCode']);

/** The key a row is stored under: the id itself, or its SHA-256 for models whose id is a bearer secret. */
export function storageKey(model: string, id: string): string {
  return SECRET_ID_MODELS.has(model) ? hash('sha256', id, 'base64url') : id;
}

/**
 * Where an earlier release kept a rotated token's encrypted successor: in the row's payload. It has a column
 * of its own since (refresh-grace.ts); rows rotated before still hold it there.
 */
export const SUCCESSOR_PAYLOAD_FIELD = 'successor_encrypted';
/** When a request claimed the answer of an interaction (claimInteractionAnswer), in its row's payload. */
const ANSWER_CLAIM_FIELD = 'answeringSince';
/** Fields kept in a row's payload for ourselves, never handed to oidc-provider. */
const PRIVATE_FIELDS = [SUCCESSOR_PAYLOAD_FIELD, ANSWER_CLAIM_FIELD] as const;

/**
 * One request's claim on answering an interaction (its consent page answered twice, Approve pressed twice or
 * Approve then Deny), marked in the interaction's own row with the time: true for the request that may
 * answer it. One statement, so no connection is held while the answer is made. The mark is a private field
 * (oidc-provider never sees it), so its next save of the interaction (the answer) writes the payload
 * without it; a claim older than CLAIM_SECONDS, of a request that died answering, no longer counts.
 */
export async function claimInteractionAnswer(orm: Orm, uid: string): Promise<boolean> {
  const rows = await orm.em.getConnection().execute(
    `update oidc_models
        set payload = payload || jsonb_build_object('${ANSWER_CLAIM_FIELD}', extract(epoch from now()))
      where model = 'Interaction' and id = ?
        and coalesce((payload->>'${ANSWER_CLAIM_FIELD}')::float8, 0) < extract(epoch from now()) - ?
      returning id`,
    [uid, CLAIM_SECONDS],
  );
  return rows.length > 0;
}
const CLAIM_SECONDS = 30;

export function createAdapterFactory(options: AdapterOptions): (model: string) => Adapter {
  return (model) => new PgAdapter(model, options);
}

/**
 * A NUL in any string of a JSON text: JSON.stringify writes it as `\u0000`, after an even number of
 * backslashes (an odd number would make it the text `\u0000` itself, escaped). Testing the text is a
 * fraction of the cost of a replacer function, which made JSON.stringify several times slower.
 */
const ESCAPED_NUL = /(?<!\\)(?:\\\\)*\\u0000/;

/** A refresh grant's client, refresh token, grant and whether the token's user exists (see #readAhead). */
const READ_AHEAD = prepared(
  `select c.payload as client_payload, c.consumed_at as client_consumed_at,
         r.payload as refresh_payload, r.consumed_at as refresh_consumed_at,
         r.grant_id, g.payload as grant_payload, g.consumed_at as grant_consumed_at,
         r.payload->>'accountId' as account_id,
         exists (select 1 from users u where u.id = account.id) as account_exists
       from (select 1) as one
       left join oidc_models c on c.model = 'Client' and c.id = ?
       left join oidc_models r on r.model = 'RefreshToken' and r.id = ?
       left join oidc_models g on g.model = 'Grant' and g.id = r.grant_id
       -- The account id as a uuid, worked out once (offset 0 keeps the planner from copying the expression
       -- into the users scan, where a table of a few dozen rows is scanned and it ran once per row).
       left join lateral (
         select case
           when r.payload->>'accountId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
           then (r.payload->>'accountId')::uuid end as id
         offset 0
       ) as account on true`,
);

/**
 * A row by each column oidc-provider looks models up by, prepared: the access-token verifier's two look-ups
 * (the token, its grant) run on every MCP or REST request whose OAuth token the verified-caller cache does
 * not hold, and the sign-in pages look up a session and an interaction on every step.
 */
type LookupColumn = 'id' | 'uid' | 'user_code';
const findBy = (column: LookupColumn) =>
  prepared(`select payload, consumed_at from oidc_models where model = ? and ${column} = ? limit 1`);
const FIND_BY: Record<LookupColumn, PreparedStatement> = {
  id: findBy('id'),
  uid: findBy('uid'),
  user_code: findBy('user_code'),
};

class PgAdapter implements Adapter {
  readonly #model: string;
  readonly #options: AdapterOptions;

  constructor(model: string, options: AdapterOptions) {
    this.#model = model;
    this.#options = options;
  }

  get #db() {
    return this.#options.orm.em.getConnection();
  }

  get #secretIds(): boolean {
    return SECRET_ID_MODELS.has(this.#model);
  }

  #key(id: string): string {
    return storageKey(this.#model, id);
  }

  // oidc-provider saves some models again unchanged (a session touched by a request, a grant re-saved
  // after a consent that added nothing). The payload carries `exp`, so an identical payload means an
  // identical expiry: such a save writes nothing (no new row version, no WAL), it is one statement either way.
  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const row = this.#pendingRow(id, payload, expiresIn);
    if (this.#secretIds && (await this.#options.rotation?.take(row))) return;
    await this.#db.execute(
      `insert into oidc_models ${INSERT_COLUMNS} values ${ROW_PLACEHOLDERS}
       on conflict (model, id) do update set payload = excluded.payload, grant_id = excluded.grant_id,
         user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at
       where (oidc_models.payload, oidc_models.grant_id, oidc_models.user_code, oidc_models.uid)
         is distinct from (excluded.payload, excluded.grant_id, excluded.user_code, excluded.uid)`,
      rowParams(row),
      'run',
    );
  }

  #pendingRow(id: string, payload: AdapterPayload, expiresIn: number): PendingRow {
    const stored = this.#seal(id, payload);
    if (this.#secretIds) delete stored.jti;
    const json = JSON.stringify(stored);
    // jsonb cannot hold NUL. What is saved here comes from request parameters (`state=%00` in an
    // authorization request), so it is the client's invalid_request, not a driver error and a 500.
    if (ESCAPED_NUL.test(json)) throw new errors.InvalidRequest('a parameter contains a NUL character');
    return {
      model: this.#model,
      id,
      key: this.#key(id),
      json,
      grantId: payload.grantId ?? null,
      userCode: payload.userCode ?? null,
      uid: payload.uid ?? null,
      expiresIn: expiresIn ?? 0,
    };
  }

  async find(id: string) {
    const key = this.#key(id);
    const ahead = this.#model === 'Client' ? await this.#readAhead(key) : takeReadAhead(this.#model, key);
    const payload =
      ahead === undefined ? await this.#findBy('id', key) : ahead ? this.#fromRow(ahead) : undefined;
    if (payload && this.#secretIds) payload.jti = id;
    return payload;
  }

  /**
   * A refresh grant looks up the client, then the refresh token, its grant and its account, one statement
   * each. All four are known from the request once the client is asked for, so they come in one statement
   * (and one snapshot); the later calls of the same request take their row from it, once each.
   * Undefined when this is not a refresh grant's client look-up: the caller reads the client alone.
   */
  async #readAhead(clientId: string): Promise<Row | null | undefined> {
    const koa = Provider.ctx;
    if (!koa || readAheads.has(koa) || clientId.includes('\u0000')) return undefined;
    const params = koa.oidc.params;
    if (params?.grant_type !== 'refresh_token' || typeof params.refresh_token !== 'string') return undefined;
    const refreshKey = storageKey('RefreshToken', params.refresh_token);
    const [row] = await this.#options.runPrepared<ReadAheadRow>(READ_AHEAD, [clientId, refreshKey]);
    // A row the statement did not find is recorded as absent (null): asking again would only repeat it.
    const rowOf = (payload: Row['payload'] | null | undefined, consumedAt: Date | null | undefined) =>
      payload ? { payload, consumed_at: consumedAt ?? null } : null;
    const ahead: ReadAhead = { rows: new Map(), accounts: new Map() };
    ahead.rows.set(`RefreshToken:${refreshKey}`, rowOf(row?.refresh_payload, row?.refresh_consumed_at));
    if (row?.grant_id)
      ahead.rows.set(`Grant:${row.grant_id}`, rowOf(row.grant_payload, row.grant_consumed_at));
    if (row?.account_id) ahead.accounts.set(row.account_id, row.account_exists);
    readAheads.set(koa, ahead);
    return rowOf(row?.client_payload, row?.client_consumed_at);
  }

  findByUid(uid: string) {
    return this.#findBy('uid', uid);
  }

  findByUserCode(userCode: string) {
    return this.#findBy('user_code', userCode);
  }

  async consume(id: string): Promise<void> {
    if (this.#model === 'RefreshToken' && this.#options.rotation?.defersConsume(this.#key(id))) return;
    // The first consumption time is kept (never moved forward), so the refresh grace window cannot be
    // stretched by using the old token again and again.
    const result = await this.#db.execute<{ affectedRows: number }>(
      'update oidc_models set consumed_at = now() where model = ? and id = ? and consumed_at is null',
      [this.#model, this.#key(id)],
      'run',
    );
    if (this.#model === 'AuthorizationCode' && result.affectedRows === 0) {
      // Two exchanges of one code raced past oidc-provider's own "already consumed" check: only one may
      // win. The loser revokes what the code produced, as a replay must.
      const rows = await this.#db.execute<{ grant_id: string | null }[]>(
        'select grant_id from oidc_models where model = ? and id = ?',
        [this.#model, this.#key(id)],
      );
      const grantId = rows[0]?.grant_id;
      if (grantId) await this.revokeByGrantId(grantId);
      throw new errors.InvalidGrant('authorization code already consumed');
    }
  }

  async destroy(id: string): Promise<void> {
    await this.#db.execute(
      'delete from oidc_models where model = ? and id = ?',
      [this.#model, this.#key(id)],
      'run',
    );
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    // oidc-provider's revocation endpoint, handed an access token, destroys it and then has every token
    // model revoke the rest of its grant too. Revoking an access token ends that token alone here
    // (docs/oauth.md): the refresh token, the consent and the account tokens the app created stay.
    if (revokingAnAccessToken()) return;
    // One statement: the grant and every code and token issued under it disappear together, and the
    // account tokens the app created are marked revoked (the account-token verifier also refuses any whose
    // grant is gone, so this only makes their status say so).
    await this.#db.execute(
      `with account_tokens_revoked as (
         update account_tokens set revoked_at = now() where oauth_grant_id = ? and revoked_at is null
       )
       delete from oidc_models where grant_id = ? or (model = 'Grant' and id = ?)`,
      [grantId, grantId, grantId],
      'run',
    );
  }

  async #findBy(column: LookupColumn, value: string): Promise<AdapterPayload | undefined> {
    // PostgreSQL text cannot hold NUL, so nothing stored has one; asking anyway is a driver error (a 500
    // for `client_id=%00`) where the answer is simply "no such client, code or session".
    if (value.includes('\u0000')) return undefined;
    const [row] = await this.#options.runPrepared<Row>(FIND_BY[column], [this.#model, value]);
    return row ? this.#fromRow(row) : undefined;
  }

  #fromRow(row: Row): AdapterPayload {
    const payload = this.#open(row.payload);
    if (row.consumed_at && !this.#withinRefreshGrace(new Date(row.consumed_at))) {
      payload.consumed = epoch(new Date(row.consumed_at));
    }
    return payload;
  }

  /** A refresh token rotated moments ago is presented as unconsumed: a parallel refresh, not a replay. */
  #withinRefreshGrace(consumedAt: Date): boolean {
    if (this.#model !== 'RefreshToken') return false;
    return Date.now() - consumedAt.getTime() < this.#options.refreshGraceSeconds * 1000;
  }

  // Client secrets are encrypted at rest (bound to the client id), so a database dump does not leak them.
  #seal(id: string, payload: AdapterPayload): Record<string, unknown> {
    const { consumed: _consumed, ...rest } = payload;
    if (this.#model !== 'Client' || typeof rest.client_secret !== 'string') return rest;
    const { client_secret, ...client } = rest;
    const sealed = this.#options.cipher.encrypt(client_secret, `oidc-client-secret:${id}`);
    return { ...client, client_secret_encrypted: sealed.toString('base64') };
  }

  #open(stored: Row['payload']): AdapterPayload {
    for (const field of PRIVATE_FIELDS) delete (stored as Record<string, unknown>)[field];
    if (this.#model !== 'Client' || typeof stored.client_secret_encrypted !== 'string') return stored;
    const { client_secret_encrypted, ...client } = stored;
    const secret = this.#options.cipher.decrypt(
      Buffer.from(client_secret_encrypted, 'base64'),
      `oidc-client-secret:${client.client_id}`,
    );
    return { ...client, client_secret: secret };
  }
}
