// `npm run migrate`: applies pending migrations to DATABASE_URL and exits, for operators who migrate
// before rolling out a new version (instances then start with MIGRATE_ON_START=false). Safe to run while
// instances are starting: it takes the same advisory lock they do.
import { ConfigError, loadMigrateConfig } from './config/index.ts';
import { connectDatabase, migrateDatabase } from './db/orm.ts';
import { createLogger } from './lib/logger.ts';

let config: ReturnType<typeof loadMigrateConfig>;
try {
  config = loadMigrateConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

const logger = createLogger(config);
try {
  const orm = await connectDatabase(config.databaseUrl, logger);
  try {
    const applied = await migrateDatabase(orm, logger);
    console.log(applied.length > 0 ? `Applied: ${applied.join(', ')}` : 'The schema is up to date.');
  } finally {
    await orm.close(true);
  }
} catch (error) {
  logger.fatal({ err: error }, 'migration failed');
  process.exit(1);
}
