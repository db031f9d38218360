import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app.ts';
import type { Config } from './config/index.ts';
import { createContext } from './context.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './db/embedded.ts';
import { abandonStatements, openDatabase } from './db/orm.ts';
import { seedDemoIfEmpty } from './domain/seed.ts';
import { clientErrorHandler, unservedRequestHandler } from './http-errors.ts';
import { createLogger, type Logger } from './lib/logger.ts';
import { startMemoryReducer } from './lib/memory-reducer.ts';
import { startMetricsServer } from './lib/metrics.ts';
import { isProbe } from './lib/probes.ts';

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

export async function startServer(
  config: Config,
  logger: Logger = createLogger(config),
): Promise<RunningServer> {
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort, logger, {
      callerShutsDown: true,
    });
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
    // Node looks for requests past their timeouts every `connectionsCheckingInterval` (30 s by default),
    // so a 20 s headers timeout took up to 50 s: the check runs four times per headers timeout instead.
    const s = createServer(
      { connectionsCheckingInterval: Math.min(30_000, Math.max(250, config.http.headersTimeoutMs / 4)) },
      app.express,
    );
    // A failed listen (a HOST that does not resolve, a PORT in use) is a start that failed, naming the
    // settings behind it.
    s.once('error', (error) =>
      reject(new Error(`cannot listen on HOST ${config.host} and PORT ${config.port}: ${error.message}`)),
    );
    s.listen(config.port, config.host, () => resolve(s));
  }).catch(unwind);
  started.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  // What Node cannot parse gets an answer in the door's format, not a bare status line.
  server.on('clientError', clientErrorHandler(logger));
  const unserved = unservedRequestHandler(logger);
  server.on('checkExpectation', (req, res) => unserved(req, res.socket!));
  server.on('connect', unserved);
  // Slow or stalled clients must not hold connections (and a shutdown) open for ever.
  server.headersTimeout = config.http.headersTimeoutMs;
  server.requestTimeout = config.http.requestTimeoutMs;
  server.keepAliveTimeout = config.http.keepAliveTimeoutMs;
  const port = (server.address() as AddressInfo).port;
  const memoryReducer =
    config.memoryReduceIdleSeconds > 0
      ? startMemoryReducer(server, { idleMs: config.memoryReduceIdleSeconds * 1000, ignore: isProbe })
      : undefined;
  if (config.memoryReduceIdleSeconds > 0 && !memoryReducer) {
    logger.warn('this Node offers no memory-reducing collection; MEMORY_REDUCE_IDLE_SECONDS has no effect');
  }
  started.push(async () => memoryReducer?.stop());
  if (!process.execArgv.includes('--no-memory-reducer')) {
    // Started some other way than `npm start` (docs/operations.md): it works, with a longer tail after pauses.
    logger.info(
      'node runs without --no-memory-reducer: V8 shrinks the heap in pauses of a few seconds and the next requests wait for it to grow back',
    );
  }
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
      memoryReducer?.stop();
      const cutOff = await drain(server, config.shutdownTimeoutMs, logger);
      await metricsServer?.close();
      if (cutOff) await abandonStatements(orm);
      // Only now that no request runs: background work, the pools, and the database they used, last.
      await app.close();
      await orm.close(true);
      await embedded?.stop();
    })();
    return stopping;
  };
  return { url, port, metricsPort: metricsServer?.port, logger, demoToken, stop };
}

/**
 * Stops accepting connections and waits for the requests in flight to be answered, at most `timeoutMs`;
 * then closes whatever connections remain. Keep-alive connections are closed as soon as they fall idle
 * (node:http closes only those idle at the moment of close()). True when requests were cut off.
 */
async function drain(server: Server, timeoutMs: number, logger: Logger): Promise<boolean> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), timeoutMs);
  });
  try {
    if (await Promise.race([closed.then(() => false), timedOut])) {
      logger.warn(
        { timeoutMs },
        'requests still in flight at the shutdown timeout; closing their connections',
      );
      server.closeAllConnections();
      await closed;
      return true;
    }
    return false;
  } finally {
    clearInterval(idleSweep);
    clearTimeout(timer);
  }
}
