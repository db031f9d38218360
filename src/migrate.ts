// `npm run migrate`: applies pending migrations to DATABASE_URL and exits, for operators who migrate
// before rolling out a new version (instances then start with MIGRATE_ON_START=false). Safe to run while
// instances are starting: it takes the same advisory lock they do.
import { loadMigrateConfig, loadOrExit } from './config/index.ts';
import { connectDatabase, migrateDatabase, migrationReport } from './db/orm.ts';
import { createLogger } from './lib/logger.ts';

const config = loadOrExit(() => loadMigrateConfig());

const logger = createLogger(config);
try {
  const orm = await connectDatabase(config.databaseUrl, logger);
  try {
    const applied = await migrateDatabase(orm, logger);
    console.log(migrationReport(applied));
  } finally {
    await orm.close(true);
  }
} catch (error) {
  logger.fatal({ err: error }, 'migration failed');
  process.exit(1);
}
