// `npm run bench:memory`: the service's memory after start and under a steady load. Starts the service as
// `npm run bench` does (`node src/main.mjs`, development mode on a fresh external database, no demo), with a
// probe preloaded that reports process.memoryUsage() over IPC, then sends batches of
// `GET /api/v1/accounts/bench/projects` with wrk and prints RSS and heap after each batch. At the end a
// full garbage collection shows the live heap.
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:memory
//   MEMORY_BATCHES (20000,20000): requests per batch; MEMORY_CONNECTIONS (10);
//   MEMORY_SNAPSHOTS=<dir>: heap snapshots after start and at the end (after the full collection);
//   MEMORY_DETAIL=1: also print V8's heap spaces and the resident memory by kind of mapping;
//   MEMORY_HEAP_PROFILE=<file>: a sampling heap profile, over the batches, of the allocations that outlived
//   the young generation (what grows the old space); summarise it with test/bench/heap-profile-summary.ts;
//   MEMORY_HEAP_PROFILE_ALL=1: that profile of every allocation instead (what sets how often a scavenge runs);
//   MEMORY_NODE_FLAGS: more flags for the service's node (`--max-semi-space-size=16`, `--trace-gc-nvp`);
//   MEMORY_SERVICE_OUTPUT=<file>: what the service writes to stdout (where `--trace-gc-nvp` goes).
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../support/ports.ts';
import { startFlags } from '../support/start-command.ts';
import { admin, databases, prepareDatabase } from './setup.ts';
import { type Target, wrk } from './wrk.ts';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  console.error('Set DATABASE_URL to a PostgreSQL server (any database on it); the bench creates its own.');
  process.exit(2);
}
const batches = (process.env.MEMORY_BATCHES ?? '20000,20000').split(',').map(Number);
const connections = Number(process.env.MEMORY_CONNECTIONS ?? 10);
const snapshots = process.env.MEMORY_SNAPSHOTS;
const detail = process.env.MEMORY_DETAIL === '1';
const heapProfile = process.env.MEMORY_HEAP_PROFILE;
const heapProfileAll = process.env.MEMORY_HEAP_PROFILE_ALL === '1';
const nodeFlags = (process.env.MEMORY_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const serviceOutput = process.env.MEMORY_SERVICE_OUTPUT;

const root = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'l10n-memory-'));

interface Usage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces?: Record<string, { physical: number; used: number }>;
  mappings?: Record<string, number>;
}

async function startService(databaseUrl: string) {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      // As npm start runs it (its V8 flags).
      ...startFlags(root),
      ...nodeFlags,
      '--expose-gc',
      '--import',
      join(import.meta.dirname, 'memory-probe.ts'),
      join(root, 'src/main.mjs'),
    ],
    {
      env: {
        ...process.env,
        // What run.ts's startService sets.
        NODE_ENV: 'development',
        PORT: String(port),
        BASE_URL: `http://127.0.0.1:${port}`,
        DATABASE_URL: databaseUrl,
        DATA_DIR: mkdtempSync(join(work, 'data-')),
        LOG_LEVEL: 'warn',
        DEV_LOGIN: 'true',
        RATE_LIMIT_TOKEN_PER_MINUTE: '100000000',
        RATE_LIMIT_REGISTER_PER_MINUTE: '1000',
        RATE_LIMIT_FAILED_AUTH_PER_MINUTE: '100000000',
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on/.test(output)) {
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) =>
      reject(new Error(`the service exited (${code}) before it was ready:\n${output}`)),
    );
  });
  if (serviceOutput) child.stdout!.pipe(createWriteStream(serviceOutput));
  else child.stdout!.resume();
  return { child, url: `http://127.0.0.1:${port}` };
}

function usage(child: ChildProcess, options: { gc?: boolean; snapshot?: string } = {}): Promise<Usage> {
  const ask = { probe: 'usage', detail, ...options };
  return new Promise((resolve) => {
    const onMessage = (message: Usage & { probe?: string }) => {
      if (message?.probe !== 'usage') return;
      child.off('message', onMessage);
      resolve(message);
    };
    child.on('message', onMessage);
    child.send(ask);
  });
}

function heapProfiler(child: ChildProcess, action: 'start' | 'stop', file?: string): Promise<void> {
  return new Promise((resolve) => {
    const onMessage = (message: { probe?: string }) => {
      if (message?.probe !== 'heap-profile') return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send({ probe: 'heap-profile', action, file, all: heapProfileAll });
  });
}

/**
 * About `count` requests: wrk runs for a duration, not a count, so it runs in rounds sized by the rate of
 * the rounds before (the last one overshoots by at most a second's worth).
 */
async function send(target: Target, count: number) {
  let requests = 0;
  let seconds = 0;
  while (requests < count) {
    const rate = requests > 0 ? requests / seconds : 0;
    const round = rate > 0 ? Math.max(1, Math.min(10, Math.ceil((count - requests) / rate))) : 3;
    const result = await wrk(target, { seconds: round, connections });
    if (result.non2xx || result.socketErrors)
      throw new Error(`${result.non2xx} non-2xx answers, ${result.socketErrors} socket errors`);
    requests += result.requests;
    seconds += result.requests / result.requestsPerSecond;
  }
  return { requests, requestsPerSecond: requests / seconds };
}

const rows: { when: string; requests: number; reqPerSecond?: number; usage: Usage }[] = [];
let service: Awaited<ReturnType<typeof startService>> | undefined;
try {
  const db = await prepareDatabase(serverUrl, 'memory');
  console.error('database ready; starting the service');
  service = await startService(db.url);
  console.error(`service listening at ${service.url}`);
  const target: Target = {
    url: `${service.url}/api/v1/accounts/bench/projects`,
    headers: { authorization: `Bearer ${db.token}` },
  };
  // Whatever start-up left to timers and the first connections is done by then.
  await sleep(2000);
  rows.push({
    when: 'after start',
    requests: 0,
    usage: await usage(service.child, { snapshot: snapshots && join(snapshots, 'start.heapsnapshot') }),
  });
  const first = await fetch(target.url, { headers: target.headers });
  if (first.status !== 200) throw new Error(`${target.url} answers ${first.status}: ${await first.text()}`);

  let total = 1;
  if (heapProfile) await heapProfiler(service.child, 'start');
  for (const count of batches) {
    console.error(`sending ${count} requests`);
    const result = await send(target, count);
    total += result.requests;
    rows.push({
      when: `after ${total.toLocaleString('en')} requests`,
      requests: total,
      reqPerSecond: result.requestsPerSecond,
      usage: await usage(service.child),
    });
  }
  if (heapProfile) await heapProfiler(service.child, 'stop', heapProfile);
  rows.push({
    when: 'then a full GC',
    requests: total,
    usage: await usage(service.child, {
      gc: true,
      snapshot: snapshots && join(snapshots, 'end.heapsnapshot'),
    }),
  });

  const table = [
    '| When | RSS MB | heapTotal MB | heapUsed MB | external MB | req/s |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.when} | ${r.usage.rss} | ${r.usage.heapTotal} | ${r.usage.heapUsed} | ${r.usage.external} | ${
          r.reqPerSecond ? Math.round(r.reqPerSecond) : ''
        } |`,
    ),
  ].join('\n');
  console.log(table);
  if (detail)
    for (const r of rows)
      console.log(r.when, JSON.stringify({ spaces: r.usage.spaces, mappings: r.usage.mappings }));
} finally {
  if (service && service.child.exitCode === null) {
    const exited = new Promise((resolve) => service!.child.once('exit', resolve));
    service.child.kill('SIGTERM');
    await exited;
  }
  for (const name of databases) await admin(serverUrl, `drop database if exists ${name}`).catch(() => {});
  rmSync(work, { recursive: true, force: true });
}
