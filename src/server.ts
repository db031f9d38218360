import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, createContext } from './app.ts';
import type { Config } from './config/index.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './db/embedded.ts';
import { openDatabase } from './db/orm.ts';
import { seedDemoIfEmpty } from './db/seed.ts';
import { createLogger, type Logger } from './lib/logger.ts';
import { startMetricsServer } from './lib/metrics.ts';

export interface RunningServer {
  url: string;
  port: number;
  logger: Logger;
  /** Port of the separate /metrics listener, when METRICS_PORT is set. */
  metricsPort?: number;
  /** The demo user's account token, when this start created the demo data; shown once, never stored. */
  demoToken?: string;
  /** Graceful: stop accepting, finish in-flight requests, close the database, stop embedded PostgreSQL. */
  stop(): Promise<void>;
}

/** Port of the embedded PostgreSQL; away from 5432 so it never collides with an installed server. */
const EMBEDDED_POSTGRES_PORT = Number(process.env.EMBEDDED_POSTGRES_PORT ?? 54329);

export async function startServer(
  config: Config,
  logger: Logger = createLogger(config),
): Promise<RunningServer> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, EMBEDDED_POSTGRES_PORT, logger);
    databaseUrl = embedded.url;
    logger.info({ dataDir: config.dataDir }, 'embedded PostgreSQL started');
  }
  // Whatever fails during start-up releases what was already started, so a failed start leaves nothing behind.
  const started: Array<() => Promise<void>> = [];
  if (embedded) started.push(() => embedded.stop());
  const unwind = async (error: unknown): Promise<never> => {
    for (const release of started.reverse()) await release().catch(() => {});
    throw error;
  };

  const orm = await openDatabase(databaseUrl, logger, { migrate: config.migrateOnStart }).catch(unwind);
  started.push(() => orm.close(true));
  const demoToken = config.seedDemo ? await seedDemoIfEmpty(orm, logger).catch(unwind) : undefined;

  const ctx = createContext(config, orm, logger);
  const app = await createApp(ctx).catch(unwind);
  started.push(() => app.close());
  const server: Server = await new Promise<Server>((resolve, reject) => {
    const s = app.express.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  }).catch(unwind);
  started.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const metricsServer =
    config.metrics.port === undefined
      ? undefined
      : await startMetricsServer(ctx.metrics, {
          host: config.host,
          port: config.metrics.port,
          token: config.metrics.token,
        }).catch(unwind);
  const url = config.port === 0 ? `http://127.0.0.1:${port}` : config.baseUrl;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await metricsServer?.close();
      await app.close();
      await orm.close(true);
      await embedded?.stop();
    })();
    return stopping;
  };
  return { url, port, metricsPort: metricsServer?.port, logger, demoToken, stop };
}
