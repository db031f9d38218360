import { Migrator } from '@mikro-orm/migrations';
import { MikroORM } from '@mikro-orm/postgresql';
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
  const applied = await orm.migrator.up();
  if (applied.length > 0) logger?.info({ migrations: applied.map((m) => m.name) }, 'applied migrations');
  return orm;
}
