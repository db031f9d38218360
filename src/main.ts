// The service's process: main.mjs (`npm start`) calls runService(). Everything else is in server.ts so tests
// start the very same service. Importing this module starts nothing (src/compile-cache.mjs imports every
// module to fill Node's compile cache); `node src/main.ts` still runs the service (import.meta.main).
import { enableCompileCache, getCompileCacheDir } from 'node:module';

export async function runService(): Promise<void> {
  // V8 keeps the compiled code of every module on disk, so a restart skips most of the parsing and compiling
  // of the dependencies (main.mjs turns this on first; `node src/main.ts` started directly gets it here,
  // before the service's modules are imported, so that they are cached too).
  if (!getCompileCacheDir()) enableCompileCache();
  const { loadConfig, loadOrExit } = await import('./config/index.ts');
  const { createLogger } = await import('./lib/logger.ts');
  const { startTracing } = await import('./lib/tracing.ts');

  const config = loadOrExit(() => loadConfig());

  const logger = createLogger(config);
  // Tracing first: its instrumentations must be in place before express and pg are loaded, hence the
  // service's modules are imported only now.
  const tracing = await startTracing(config);
  const { startServer } = await import('./server.ts');
  const starting = startServer(config, logger);

  // Graceful shutdown: stop accepting, let requests in flight finish (at most SHUTDOWN_TIMEOUT_MS), close
  // the pools, stop an embedded PostgreSQL last, exit 0. Registered before the start, so a signal during it
  // (migrations, PostgreSQL starting) waits for the start and then stops cleanly instead of leaving an
  // embedded PostgreSQL behind. A second signal, of either kind (SIGTERM then Ctrl-C too), ends the process
  // at once, through process.exit: its exit hook still tells an embedded PostgreSQL to stop, which in its
  // own process group would otherwise outlive us and hold its port.
  const STOP_MARGIN_MS = 15_000; // closing pools and stopping PostgreSQL after the requests are done
  // pino writes to standard output asynchronously, and process.exit writes what is still buffered at once:
  // "stopped" could land in the file before "shutting down", whose write was still under way. A flush that
  // never calls back (standard output gone) must not keep the process, nor let it end with another code.
  const exitWhenLogged = (code: number) => {
    setTimeout(() => process.exit(code), 2_000);
    logger.flush(() => process.exit(code));
  };
  let stopping = false;
  const onSignal = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown did not finish in time; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs + STOP_MARGIN_MS);
    force.unref();
    starting
      .then((server) => server.stop())
      .then(() => tracing?.shutdown())
      .then(
        () => {
          logger.info('stopped');
          exitWhenLogged(0);
        },
        (error) => {
          logger.error({ err: error }, 'shutdown failed');
          exitWhenLogged(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  const server = await starting.catch((error) => {
    // startServer has already released whatever it had started.
    logger.fatal({ err: error }, 'failed to start');
    exitWhenLogged(1);
    return new Promise<never>(() => {});
  });
  // The public URL (BASE_URL) and where this instance listens, which behind a load balancer differ.
  logger.info({ url: server.url, host: config.host, port: server.port }, 'listening');
  console.log(`Localization service listening on ${server.url}`);
  if (server.demoToken) {
    // Printed to the terminal once (never to the log): the only copy of the demo user's token.
    console.log(
      `Demo data created. Try the API as user "demo" (this token is shown once, expires in 30 days):\n` +
        `  curl -H "Authorization: Bearer ${server.demoToken}" ${server.url}/api/v1/accounts`,
    );
  }
}

if (import.meta.main) await runService();
