import { AsyncLocalStorage } from 'node:async_hooks';
import { Migrator } from '@mikro-orm/migrations';
import { MikroORM } from '@mikro-orm/postgresql';
import pg, { type Pool, type PoolClient, type QueryConfig, type QueryResult } from 'pg';
import type { Logger } from 'pino';
import { allEntities } from './entities/index.ts';
import { migrations } from './migrations/index.ts';

export type Orm = MikroORM;

export interface OpenDatabaseOptions {
  /**
   * Apply pending migrations (the default). When false the schema must already be current: the start
   * fails naming the pending migrations, so an instance never runs on a schema it does not know.
   */
  migrate?: boolean;
}

/** Connects to PostgreSQL and, unless told not to, brings the schema up to date with the committed migrations. */
export async function openDatabase(
  databaseUrl: string,
  logger?: Logger,
  options: OpenDatabaseOptions = {},
): Promise<Orm> {
  const orm = await connectDatabase(databaseUrl, logger);
  try {
    if (options.migrate ?? true) {
      await migrateDatabase(orm, logger);
    } else {
      const pending = await orm.migrator.getPending();
      if (pending.length > 0) {
        throw new Error(
          `the database schema is behind this version (pending: ${pending.map((m) => m.name).join(', ')}); ` +
            'run `npm run migrate` or start with MIGRATE_ON_START=true',
        );
      }
    }
  } catch (error) {
    await orm.close(true);
    throw error;
  }
  return orm;
}

/** Connects without touching the schema (`npm run migrate` migrates itself; the service uses openDatabase). */
export async function connectDatabase(databaseUrl: string, logger?: Logger): Promise<Orm> {
  const orm = await MikroORM.init({
    clientUrl: databaseUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false },
    // Handlers always fork the EntityManager per operation; the global one must never hold state.
    allowGlobalContext: false,
    pool: { min: 0, max: 10 },
    // Never create the database named in the URL (refuseUnfitDatabase below says why).
    ensureDatabase: false,
    // pg's own bounds (DATABASE_TIMEOUTS), passed to the pool and to every connection it makes.
    driverOptions: { Client: CallbackFirstClient, ...DATABASE_TIMEOUTS },
    debug: false,
    logger: (message) => logger?.debug({ orm: true }, message),
  });
  releaseDeadConnections(await orm.em.getConnection().getNativeClient());
  await refuseUnfitDatabase(orm, databaseUrl);
  return orm;
}

/**
 * What the service needs of the database before it touches it:
 * - that it exists. MikroORM (at connect, and its migrator again) creates the database it is pointed at
 *   when it does not, so a mistyped name in DATABASE_URL started a healthy-looking instance on a new, empty
 *   database (every token unknown). The database is the operator's to create.
 * - that it stores text as UTF-8. A SQL_ASCII database (what initdb makes where no locale is set, a bare
 *   container say) counts bytes where the API counts characters, so the length checks of the schema refuse a
 *   100-character project name in Japanese that the API accepted, and lower() leaves non-ASCII letters alone.
 */
async function refuseUnfitDatabase(orm: Orm, databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  let encoding: string | undefined;
  try {
    const [row] = await orm.em
      .getConnection()
      .execute<{ encoding: string }[]>(`select current_setting('server_encoding') as encoding`);
    encoding = row?.encoding;
  } catch (error) {
    await orm.close(true);
    const code = (error as { code?: unknown }).code;
    if (code === '3D000')
      throw new Error(
        `the database "${name}" named in DATABASE_URL does not exist on that server; create it first (createdb ${name})`,
      );
    // Which server it tried, so the operator knows which setting to look at (the password is left out): a
    // host and port, or the socket directory of a `?host=/run/postgresql` URL.
    const url = new URL(databaseUrl);
    const server = url.searchParams.get('host') ?? `${url.hostname}:${url.port || 5432}`;
    throw new Error(
      `could not use the database server named in DATABASE_URL (${server}, database "${name}"): ${(error as Error).message}`,
    );
  }
  if (encoding !== 'UTF8') {
    await orm.close(true);
    throw new Error(
      `the database "${name}" stores text as ${encoding}, and the service needs UTF8; create it so ` +
        `(createdb --encoding=UTF8 --template=template0 ${name}) and move the data over with pg_dump and pg_restore`,
    );
  }
}

/**
 * Bounds on waiting for PostgreSQL, so that a database that stops answering (a network partition, a frozen
 * host: connections are neither refused nor closed) costs a request a bounded wait and a 503, never a hang.
 * - connecting (a new connection, or waiting for a free one of the pool's 10): 5 s;
 * - a statement: PostgreSQL cancels it after 15 s (statement_timeout, sent with every connection), and
 *   the client gives up one second later if the server has not answered at all (query_timeout). A
 *   connection whose statement timed out on the client is closed at once, never reused (CallbackFirstClient);
 * - TCP keepalive on every connection, so one the network lost is noticed while it is idle.
 * Migrations are exempt from the statement bounds (runUntimed): one may rewrite a table, or wait for
 * another instance's migration lock.
 */
const DATABASE_TIMEOUTS = {
  connectionTimeoutMillis: 5_000,
  statement_timeout: 15_000,
  query_timeout: 16_000,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
} as const;

/** pg's error for a statement the server did not answer within query_timeout. */
const READ_TIMEOUT = 'Query read timeout';
/** Above any real statement, for setTimeout's limit (2^31 - 1 ms). */
const NO_TIMEOUT = 2 ** 31 - 1;
/** Set while migrations run: their statements are sent without query_timeout. */
const untimed = new AsyncLocalStorage<true>();

/** Runs `work` with no client-side statement bound on the statements it sends (on the connection it holds). */
function runUntimed<T>(work: () => Promise<T>): Promise<T> {
  return untimed.run(true, work);
}

/**
 * Every statement MikroORM sends reaches `pg` through Kysely as `client.query(sql, params)`, the promise
 * form. That form builds its Query first and gives it a callback afterwards, and measured so (a loop of
 * list statements, `--trace-gc-nvp`), about a fifth of what each statement allocates survives young-
 * generation collections: V8 grows the young generation to its maximum (2 x 64 MB here) and promotes
 * the rows into the old space, which then fills with garbage until a full collection. The same
 * statement with its callback passed in at construction keeps almost nothing (84 MB promoted against
 * 7 MB over 30k statements). We do not know the V8 mechanism; this client makes the promise first and
 * hands `pg` its callback, the form whose results die young. Everything else is `pg`'s own, and a call
 * that brings its own callback (as an argument or on a query config) goes to `pg` untouched.
 */
class CallbackFirstClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's overloads cannot be restated in a subclass; the arguments pass through untouched.
  override query(config: unknown, values?: unknown, callback?: unknown): any {
    const query = super.query as (...args: unknown[]) => unknown;
    const given = config as { submit?: unknown; callback?: unknown } | null;
    const callsBack = typeof given?.submit === 'function' || typeof given?.callback === 'function';
    // A missing config too: pg throws for it at once, and so it still does.
    if (config == null || callback !== undefined || typeof values === 'function' || callsBack) {
      // pg-pool's own query() (the prepared statements) releases a connection with its error, which drops it.
      return query.call(this, config, values, callback);
    }
    // Inside runUntimed (migrations) the statement gets no client-side bound.
    const sent =
      untimed.getStore() && (typeof config === 'string' || typeof config === 'object')
        ? { ...(typeof config === 'string' ? { text: config } : config), query_timeout: NO_TIMEOUT }
        : config;
    return new Promise<QueryResult>((resolve, reject) => {
      query.call(this, sent, values, (error: Error | null, result: QueryResult) => {
        if (error?.message === READ_TIMEOUT) this.discard();
        return error ? reject(error) : resolve(result);
      });
    });
  }

  /**
   * After a read timeout pg leaves the unanswered statement in place, and the connection would come back
   * to the pool with every later statement queued behind it. It is closed instead (end() destroys a socket
   * with a statement in flight), so the pool drops it and connects afresh; releaseDeadConnections gives it
   * back if its holder never does.
   */
  private discard(): void {
    this.end().catch(() => {});
  }

  /**
   * Closing a connection says goodbye to the server and waits for its answer, which a server that stopped
   * answering never sends: the pool's end() at shutdown would wait for ever. After the connect bound the
   * socket is destroyed.
   */
  override end(): Promise<void>;
  override end(callback: (error: Error) => void): void;
  override end(callback?: (error: Error) => void): Promise<void> | void {
    const stream = socketOf(this);
    const timer = setTimeout(() => stream?.destroy(), DATABASE_TIMEOUTS.connectionTimeoutMillis);
    timer.unref();
    this.once('end', () => clearTimeout(timer));
    return callback ? super.end(callback) : super.end();
  }
}

/**
 * For /readyz: resolves once PostgreSQL answers `select 1`, rejects when it fails or has not answered
 * within `withinMs` (a database that stopped answering must not hold the probe for the statement bound).
 */
export async function pingDatabase(orm: Orm, withinMs: number): Promise<void> {
  const pool = await orm.em.getConnection().getNativeClient();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the database did not answer within ${withinMs} ms`)),
      withinMs,
    );
  });
  try {
    // Its own read bound too, so the connection is dropped and not held until the statement bound.
    const probe: QueryConfig & { query_timeout: number } = { text: 'select 1', query_timeout: withinMs };
    await Promise.race([pool.query(probe), late]);
  } finally {
    clearTimeout(timer);
  }
}

// One lock id shared by every instance and by `npm run migrate`; hashtext() keeps its origin readable.
const MIGRATION_LOCK = `select pg_advisory_xact_lock(hashtext('localization-service:migrations'))`;

/**
 * Applies pending migrations, safe to run from any number of instances at once: everything runs in one
 * transaction that first takes a PostgreSQL advisory lock, so one instance migrates while the others wait
 * and then find nothing pending once it commits. The migrations table is created inside that transaction
 * too, since two concurrent `create table if not exists` can still collide in PostgreSQL.
 * Returns the names of the migrations this call applied.
 */
/** What a run of migrateDatabase did, said to an operator (`npm run migrate`, `npm run admin -- migrate`). */
export function migrationReport(applied: string[]): string {
  return applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'The schema is up to date.';
}

export async function migrateDatabase(orm: Orm, logger?: Logger): Promise<string[]> {
  const connection = orm.em.getConnection();
  // No statement bound: a migration may rewrite a big table, and the lock may be held by another instance's.
  const applied = await runUntimed(() =>
    connection.transactional(async (trx) => {
      await connection.execute('set local statement_timeout = 0', [], 'run', trx);
      await connection.execute(MIGRATION_LOCK, [], 'run', trx);
      return orm.migrator.up({ transaction: trx });
    }),
  );
  const names = applied.map((m) => m.name);
  if (names.length > 0) logger?.info({ migrations: names }, 'applied migrations');
  return names;
}

/** The connections each pool has lent out and not yet had back (for abandonStatements). */
const lentOut = new WeakMap<Pool, Set<PoolClient>>();

/**
 * A pooled connection that dies while checked out (PostgreSQL restarting, a failover) inside a transaction
 * is never given back: Kysely releases a transaction's connection only after a successful COMMIT or
 * ROLLBACK, and on a dead connection both fail. Each outage would leak the connections of the transactions
 * in flight, until the pool has none left and every request waits for ever (and closing the pool hangs).
 * So a connection that ends while checked out is released here, with an error so the pool drops it; the
 * holder's own release later, if any, does nothing.
 */
function releaseDeadConnections(pool: Pool): void {
  const checkedOut = new Set<PoolClient>();
  const watched = new WeakSet<PoolClient>();
  lentOut.set(pool, checkedOut);
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('acquire', (client) => {
    checkedOut.add(client);
    if (watched.has(client)) return;
    watched.add(client);
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      checkedOut.delete(client);
      client.release(new Error('connection ended while checked out'));
      client.release = () => {};
    });
  });
}

/**
 * At shutdown, once the requests that were still running have had their connections cut: their statements
 * have no one left to answer, but closing the pool would wait for each of them to come back, which against
 * a database that stopped answering is the full statement bound (16 s) after the shutdown timeout. Their
 * connections are closed instead (PostgreSQL rolls back an open transaction), and the pool, rid of them
 * through releaseDeadConnections, closes at once.
 */
export async function abandonStatements(orm: Orm): Promise<void> {
  const pool = await orm.em.getConnection().getNativeClient();
  for (const client of lentOut.get(pool) ?? []) socketOf(client)?.destroy();
}

/** The socket under a pg connection (pg keeps it on its private `connection`). */
function socketOf(client: pg.Client | PoolClient): { destroy(): void } | undefined {
  return (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
}
