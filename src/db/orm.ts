import { Migrator } from '@mikro-orm/migrations';
import { MikroORM } from '@mikro-orm/postgresql';
import pg, { type Pool, type PoolClient, type QueryResult } from 'pg';
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
    driverOptions: { Client: CallbackFirstClient },
    debug: false,
    logger: (message) => logger?.debug({ orm: true }, message),
  });
  releaseDeadConnections(await orm.em.getConnection().getNativeClient());
  return orm;
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
      return query.call(this, config, values, callback);
    }
    return new Promise<QueryResult>((resolve, reject) => {
      query.call(this, config, values, (error: Error | null, result: QueryResult) =>
        error ? reject(error) : resolve(result),
      );
    });
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
export async function migrateDatabase(orm: Orm, logger?: Logger): Promise<string[]> {
  const connection = orm.em.getConnection();
  const applied = await connection.transactional(async (trx) => {
    await connection.execute(MIGRATION_LOCK, [], 'run', trx);
    return orm.migrator.up({ transaction: trx });
  });
  const names = applied.map((m) => m.name);
  if (names.length > 0) logger?.info({ migrations: names }, 'applied migrations');
  return names;
}

/**
 * A pooled connection that dies while checked out (PostgreSQL restarting, a failover) inside a transaction
 * is never given back: Kysely releases a transaction's connection only after a successful COMMIT or
 * ROLLBACK, and on a dead connection both fail. Each outage would leak the connections of the transactions
 * in flight, until the pool has none left and every request waits for ever (and closing the pool hangs).
 * So a connection that ends while checked out is released here, with an error so the pool drops it; the
 * holder's own release later, if any, does nothing.
 */
function releaseDeadConnections(pool: Pool): void {
  const checkedOut = new WeakSet<PoolClient>();
  const watched = new WeakSet<PoolClient>();
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('acquire', (client) => {
    checkedOut.add(client);
    if (watched.has(client)) return;
    watched.add(client);
    client.once('end', () => {
      if (!checkedOut.has(client)) return;
      client.release(new Error('connection ended while checked out'));
      client.release = () => {};
    });
  });
}
