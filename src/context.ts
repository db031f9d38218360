// What every part of the service is built from, created once per process. It sits at the bottom of the
// layers (it names only configuration, the database handle and library services), so every layer above
// can take it without importing the app that assembles them.
import type { Config } from './config/index.ts';
import type { Orm } from './db/orm.ts';
import { createRunPrepared, type RunPrepared } from './db/prepared.ts';
import { createFieldCipher, type FieldCipher } from './lib/field-encryption.ts';
import type { Logger } from './lib/logger.ts';
import { createMetrics, type Metrics } from './lib/metrics.ts';
import { createSizedCache, type SizedCache } from './lib/sized-cache.ts';
import type { JsonArrayText } from './lib/spliced-json.ts';

/** What every part of the service is built from; created once per process. */
export interface ServiceContext {
  config: Config;
  orm: Orm;
  /** A prepared statement outside any transaction, for the statements of every request (src/db/prepared.ts). */
  runPrepared: RunPrepared;
  logger: Logger;
  cipher: FieldCipher;
  metrics: Metrics;
  /**
   * The entries of glossary versions this process has read, as JSON text, by version id. A version is never
   * changed once written (an edit writes the next one), so nothing ever invalidates an entry.
   */
  glossaryEntries: SizedCache<JsonArrayText>;
}

export function createContext(config: Config, orm: Orm, logger: Logger): ServiceContext {
  const metrics = createMetrics({
    async poolStats() {
      const pool = await orm.em.getConnection().getNativeClient();
      return {
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
        max: pool.options.max ?? 0,
      };
    },
  });
  return {
    config,
    orm,
    runPrepared: createRunPrepared(orm, config.preparedStatements),
    logger,
    cipher: createFieldCipher(config.fieldEncryptionKey),
    metrics,
    // V8 keeps a string in one or two bytes a character; two is the bound.
    glossaryEntries: createSizedCache(config.glossaryCacheMb * 1024 * 1024, (json) => json.text.length * 2),
  };
}
