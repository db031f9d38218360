import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevSecrets } from '../../src/config/dev-secrets.ts';
import { type Config, loadConfig } from '../../src/config/index.ts';
import type { Logger } from '../../src/lib/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { scannedLogger } from './log-scan.ts';
import { freePort } from './ports.ts';

export interface TestService extends RunningServer {
  config: Config;
  database: TestDatabase;
  /** Stops the service and drops its database. */
  close(): Promise<void>;
}

// One set of secrets per test process, shared by every instance it starts, as production instances share
// theirs: a restarted or second instance must read the first one's cookies, tokens and encrypted fields.
const secrets = loadOrCreateDevSecrets(mkdtempSync(join(tmpdir(), 'l10n-test-secrets-')));
export const sharedSecretsEnv = {
  COOKIE_KEYS: secrets.cookieKeys.join(','),
  SIGNING_JWKS: JSON.stringify(secrets.signingJwks),
  FIELD_ENCRYPTION_KEY: secrets.fieldEncryptionKey,
};

/**
 * Starts the real service (the same startServer as `npm start`) on a loopback port with its own database.
 * Pass `database` to start a second instance on the same data (restart and multi-instance tests).
 */
export async function startTestService(
  env: Record<string, string> = {},
  options: { database?: TestDatabase; logger?: Logger } = {},
): Promise<TestService> {
  const database = options.database ?? (await createTestDatabase());
  const dataDir = mkdtempSync(join(tmpdir(), 'l10n-test-data-'));
  const port = await freePort();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: database.url,
    DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Many services share one test process; a full collection at each start would only slow the suite
    // (test/lib/memory-reducer.test.ts turns it on).
    MEMORY_REDUCE_IDLE_SECONDS: '0',
    ...sharedSecretsEnv,
    ...env,
  });
  // Unless the suite watches the log itself, it goes to a file that is scanned for credentials at close.
  const scanned = options.logger ? undefined : scannedLogger();
  const server = await startServer(config, options.logger ?? scanned!.logger).catch(async (error) => {
    scanned?.discard();
    if (!options.database) await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  const scanLog = async () => {
    const findings = (await scanned?.scan(database.url, config.fieldEncryptionKey)) ?? [];
    if (findings.length > 0) {
      throw new Error(`credentials written to the service log ${scanned!.file}:\n${findings.join('\n')}`);
    }
  };
  return {
    ...server,
    config,
    database,
    /** Stops the service only (the database stays, for another instance), and scans its log. */
    async stop() {
      await server.stop();
      await scanLog();
    },
    async close() {
      await server.stop();
      try {
        await scanLog();
      } finally {
        if (!options.database) await database.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
