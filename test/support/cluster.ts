// Several real service processes (started as `npm start` starts them) behind a small round-robin
// load balancer of the test's own, for the multi-instance suite. Processes, not in-process servers, so
// that an instance can be killed the way a machine dies (SIGKILL). Also one such process polled until
// ready, for the suites that start the service as a newcomer or an operator would.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { freePort } from './ports.ts';
import { sharedSecretsEnv } from './service.ts';
import { startArguments } from './start-command.ts';

const ROOT = join(import.meta.dirname, '..', '..');

export interface Instance {
  name: string;
  port: number;
  url: string;
  /** Everything the process wrote, for a failure message. */
  output: string[];
  /** SIGKILL: no graceful shutdown, connections just drop. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit (graceful shutdown). */
  stop(): Promise<void>;
}

/**
 * Starts the service as `npm start` does, with exactly `env`, adds it to `children` (for the suite to
 * kill), and polls its /readyz (about 30 seconds at most, less if it exits): the start-up the first-run and
 * production suites share. `ready` says whether it answered 200; `output` is everything it wrote so far.
 */
export async function startMainUntilReady(port: number, env: NodeJS.ProcessEnv, children: ChildProcess[]) {
  const child = spawn(process.execPath, startArguments(ROOT), {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => {
    output += d;
  });
  child.stderr!.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let ready = false;
  for (let attempt = 0; attempt < 120 && !ready && child.exitCode === null; attempt++) {
    ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (!ready) await new Promise((r) => setTimeout(r, 250));
  }
  return { child, exited, ready, output: () => output };
}

/** Starts the service as `npm start` does, with exactly `env` (plus PATH), and resolves once it listens. */
export async function spawnInstance(
  name: string,
  port: number,
  env: Record<string, string>,
): Promise<Instance> {
  const output: string[] = [];
  const child: ChildProcess = spawn(process.execPath, startArguments(ROOT), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('Localization service listening on')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.once('exit', (code) =>
      reject(new Error(`${name} exited (${code}) before listening:\n${output.join('')}`)),
    );
  });
  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
  };
  return {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    output,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
  };
}

export interface Balancer {
  url: string;
  /** The instances requests go to, in turn; replace entries to roll an upgrade. */
  backends: Instance[];
  close(): Promise<void>;
}

/**
 * Round robin over `backends`, as a load balancer in front of the service would: adds X-Forwarded-For,
 * and sends a request that could not even connect (the instance is gone) to the next backend. A request
 * may name its backend with `x-test-backend: <name>`.
 */
export async function startBalancer(port: number, backends: Instance[]): Promise<Balancer> {
  let next = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const pinned = req.headers['x-test-backend'];
      const order = pinned
        ? balancer.backends.filter((b) => b.name === pinned)
        : balancer.backends.map((_, i) => balancer.backends[(next + i) % balancer.backends.length]!);
      next++;
      const attempt = (i: number) => {
        const backend = order[i];
        if (!backend) {
          res.writeHead(502).end('no backend');
          return;
        }
        const headers = { ...req.headers, 'x-forwarded-for': req.headers['x-forwarded-for'] ?? '127.0.0.1' };
        // A connection of its own per request (no keep-alive pool): a killed backend then refuses the next
        // request, which goes to the other one, where a pooled socket to it would reset a request it never
        // received and count it as lost with the ones that were in flight.
        const upstream = request(
          { host: '127.0.0.1', port: backend.port, method: req.method, path: req.url, headers, agent: false },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, { ...answer.headers, 'x-test-served-by': backend.name });
            answer.pipe(res);
          },
        );
        upstream.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code === 'ECONNREFUSED' && !pinned) attempt(i + 1);
          else if (!res.headersSent) res.writeHead(502).end(`backend ${backend.name}: ${error.code}`);
          else res.destroy();
        });
        upstream.end(body);
      };
      attempt(0);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const balancer: Balancer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    backends,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return balancer;
}

/**
 * For the suites that ask a start of the service what it loaded. `preload` is the text of a module
 * imported before the service that reports at exit as `<marker>=<report>` on a line of its own. Call at the
 * top of a test file: it writes the preload into a work folder (also the suite's own, `work`) and makes a
 * test database, both removed after the file's tests. `report(env)` is one start: checked ready, stopped
 * (SIGTERM), and what the preload reported.
 */
export function startReports(marker: string, preload: string) {
  const work = mkdtempSync(join(tmpdir(), 'l10n-start-report-'));
  const preloadFile = join(work, 'preload.mjs');
  writeFileSync(preloadFile, preload);
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
    rmSync(work, { recursive: true, force: true });
  });
  return {
    work,
    report: (env: Record<string, string> = {}) =>
      reportOfOneStart({ databaseUrl: database!.url, preload: preloadFile, marker, env }),
  };
}

async function reportOfOneStart(options: {
  databaseUrl: string;
  preload: string;
  marker: string;
  env: Record<string, string>;
}): Promise<string> {
  const port = await freePort();
  const instance = await spawnInstance(options.marker, port, {
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: options.databaseUrl,
    NODE_OPTIONS: `--import=${options.preload}`,
    ...sharedSecretsEnv,
    ...options.env,
  });
  const ready = await fetch(`${instance.url}/readyz`);
  await instance.stop();
  const output = instance.output.join('');
  if (ready.status !== 200) throw new Error(`the service was not ready (${ready.status}):\n${output}`);
  const report = new RegExp(`^${options.marker}=(.*)$`, 'm').exec(output);
  if (!report) throw new Error(`the preload reported no ${options.marker}:\n${output}`);
  return report[1]!;
}
