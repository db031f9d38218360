import { Migrator } from '@mikro-orm/migrations';
import { MikroORM } from '@mikro-orm/postgresql';
import type { Pool, PoolClient } from 'pg';
import type { Logger } from 'pino';
import { allEntities } from './entities/index.ts';
import { migrations } from './migrations/index.ts';

export type Orm = MikroORM;

/** Connects to PostgreSQL and brings the schema up to date with the committed migrations. */
export async function openDatabase(databaseUrl: string, logger?: Logger): Promise<Orm> {
  const orm = await MikroORM.init({
    clientUrl: databaseUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: { migrationsList: migrations, transactional: true, allOrNothing: true, snapshot: false },
    // Handlers always fork the EntityManager per operation; the global one must never hold state.
    allowGlobalContext: false,
    pool: { min: 0, max: 10 },
    debug: false,
    logger: (message) => logger?.debug({ orm: true }, message),
  });
  releaseDeadConnections(await orm.em.getConnection().getNativeClient());
  const applied = await orm.migrator.up();
  if (applied.length > 0) logger?.info({ migrations: applied.map((m) => m.name) }, 'applied migrations');
  return orm;
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
