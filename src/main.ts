// Process entry: `npm start`. Everything else is in server.ts so tests start the very same service.
import { ConfigError, loadConfig } from './config/index.ts';
import { createLogger } from './lib/logger.ts';
import { startTracing } from './lib/tracing.ts';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

const logger = createLogger(config);
// Tracing first: its instrumentations must be in place before express and pg are loaded, hence the
// service's modules are imported only now.
const tracing = await startTracing(config);
const { startServer } = await import('./server.ts');
const server = await startServer(config, logger).catch((error) => {
  logger.fatal({ err: error }, 'failed to start');
  process.exit(1);
});
logger.info({ url: server.url }, 'listening');
console.log(`Localization service listening on ${server.url}`);
if (server.demoToken) {
  // Printed to the terminal once (never to the log): the only copy of the demo user's token.
  console.log(
    `Demo data created. Try the API as user "demo" (this token is shown once, expires in 30 days):\n` +
      `  curl -H "Authorization: Bearer ${server.demoToken}" ${server.url}/api/v1/accounts`,
  );
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 25 s; exiting');
      process.exit(1);
    }, 25_000);
    force.unref();
    server
      .stop()
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (error) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}
