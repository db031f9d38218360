// The processes a benchmark measures: the service itself (as `npm start` starts it, V8 flags included) and
// the baselines, each its own process so no two share an event loop, a heap or a garbage collector.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../support/ports.ts';
import { startFlags } from '../support/start-command.ts';
import { refreshChain } from './setup.ts';
import type { Target } from './wrk.ts';

const root = join(import.meta.dirname, '..', '..');

export interface Child {
  process: ChildProcess;
  /** The line the process printed once it was ready. */
  ready: string;
  /** Resident set size now, in MB (Linux /proc). */
  rssMb(): number;
  stop(): Promise<void>;
}

async function startChild(
  script: string,
  env: Record<string, string>,
  readyPattern: RegExp,
  nodeArgs: string[] = [],
  /** The checkout the script is in: this one unless a comparison starts another (`npm run bench:cpu`). */
  checkout = root,
): Promise<Child> {
  const child = spawn(process.execPath, [...nodeArgs, join(checkout, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = output.split('\n').find((line) => readyPattern.test(line));
      if (!match) return;
      // Read on (a full pipe would stop the child) but keep nothing: with request logging on
      // (BENCH_LOG_LEVEL=info) a run writes a line per request.
      child.stdout!.off('data', onData).resume();
      resolve(match);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) =>
      reject(new Error(`${script} exited (${code}) before it was ready:\n${output}`)),
    );
  });
  return {
    process: child,
    ready,
    rssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
    },
    stop() {
      if (child.exitCode !== null) return Promise.resolve();
      return new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}

/**
 * The service as the benchmarks start it: `npm start`'s entry, in development mode (no demo data, no
 * response validation) on the benchmark's database, with the development sign-in (refresh tokens are minted
 * through it) and the rate limits raised so that the load measures the operation, not the limiter.
 */
export async function startService(options: {
  databaseUrl: string;
  dataDir: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  checkout?: string;
}): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = await startChild(
    'src/main.mjs',
    {
      NODE_ENV: 'development',
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: options.dataDir,
      // Request logging off unless asked for (BENCH_LOG_LEVEL=info, the default of an installation): the
      // line costs what docs/performance.md says, and a load test's log is of no use.
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      DEV_LOGIN: 'true',
      RATE_LIMIT_TOKEN_PER_MINUTE: '100000000',
      RATE_LIMIT_REGISTER_PER_MINUTE: '1000',
      // With 32 connections the failed-authentication limiter refuses good requests too (it counts every
      // request in flight until it succeeds; see docs/performance.md), so the benchmark raises it.
      RATE_LIMIT_FAILED_AUTH_PER_MINUTE: '100000000',
      ...options.env,
    },
    /listening on/,
    // As npm start runs it (its V8 flags), in the checkout measured.
    [...startFlags(options.checkout ?? root), ...(options.nodeArgs ?? [])],
    options.checkout,
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

/** A bare node:http + pg server (bare-server.ts) running `statements` per request; its URL is `ready`'s port. */
export function startBare(
  databaseUrl: string,
  statements: { name?: string; text: string; values: unknown[] }[],
  nodeArgs?: string[],
): Promise<Child> {
  return startChild(
    'test/bench/bare-server.ts',
    { DATABASE_URL: databaseUrl, BARE_STATEMENTS: JSON.stringify(statements) },
    /^BARE_LISTENING \d+/,
    nodeArgs,
  );
}

/** The URL a child that printed `<WORD>_LISTENING <port>` listens on. */
export const listeningUrl = (child: Child) => `http://127.0.0.1:${child.ready.split(' ')[1]}/`;

/** Fresh grants minted for a round of bare refreshes: enough to renew chains at 6,000 req/s for 10 s. */
const FRESH_GRANTS = 6000;
/** With 10 connections, a grant is refreshed about a hundred times before a fresh one replaces it. */
const RENEW_EVERY = 10;

/**
 * Bare oidc-provider with its memory adapter (bare-oidc.ts): `refreshTarget(chains)` is a round of its
 * refresh grant, from tokens `mint(n)` hands out (its second port, not measured).
 */
export async function startBareOidc(nodeArgs?: string[]) {
  const port = await freePort();
  const child = await startChild(
    'test/bench/bare-oidc.ts',
    { BARE_OIDC_PORT: String(port) },
    /^BARE_OIDC_LISTENING \d+/,
    nodeArgs,
  );
  const tokenUrl = `http://127.0.0.1:${port}/oauth/token`;
  return {
    child,
    /** `registered`: for the client stored in the adapter rather than the configuration's (bare-oidc.ts). */
    async mint(
      n: number,
      client: 'static' | 'registered' = 'static',
    ): Promise<{ clientId: string; tokens: string[] }> {
      return (await fetch(`${listeningUrl(child)}mint?n=${n}&client=${client}`)).json() as never;
    },
    /** `chains` chains of rotated refresh tokens, renewed from fresh grants as they go (refreshChain). */
    async refreshTarget(chains: number, client: 'static' | 'registered' = 'static'): Promise<Target> {
      const { clientId, tokens } = await this.mint(chains + FRESH_GRANTS, client);
      return refreshChain(tokenUrl, clientId, tokens.slice(0, chains), {
        tokens: tokens.slice(chains),
        renewEvery: RENEW_EVERY,
      });
    },
  };
}
