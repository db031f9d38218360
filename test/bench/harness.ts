// Shared by the benchmarks: a real service on a fresh database (DATABASE_URL's server, or an embedded
// PostgreSQL), a user with a token and some projects, and autocannon runs reported side by side.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';
import { loadConfig } from '../../src/config/index.ts';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { Project } from '../../src/db/entities/index.ts';
import { type Orm, openDatabase } from '../../src/db/orm.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { freePort } from '../support/ports.ts';

export interface BenchEnv {
  service: RunningServer;
  databaseUrl: string;
  token: string;
  accountId: string;
  handle: string;
  close(): Promise<void>;
}

export async function startBenchService(projectCount = 20): Promise<BenchEnv> {
  const dir = mkdtempSync(join(tmpdir(), 'l10n-bench-'));
  chmodSync(dir, 0o755);
  let serverUrl = process.env.DATABASE_URL;
  const embedded = serverUrl ? undefined : await startEmbeddedPostgres(join(dir, 'pg'), await freePort());
  serverUrl ??= embedded!.url;
  const dbName = `bench_${Date.now()}`;
  await admin(serverUrl, `create database ${dbName}`);
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();

  const port = await freePort();
  // Development mode on an external database: no demo seed, no dev sign-in, no response validation —
  // the request path production runs.
  const config = loadConfig({
    NODE_ENV: 'development',
    BASE_URL: `http://127.0.0.1:${port}`,
    PORT: String(port),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    DATA_DIR: join(dir, 'data'),
  });
  const service = await startServer(config);

  const orm = await openDatabase(databaseUrl);
  const em = orm.em.fork();
  const { user, account } = createUserWithAccount(em, { handle: 'bench', displayName: 'Bench' });
  const { secret } = issueAccountToken(em, {
    account,
    createdById: user.id,
    name: 'bench',
    scopes: ALL_SCOPES,
  });
  for (let i = 0; i < projectCount; i++) {
    em.create(Project, {
      account,
      handle: `p${i}`,
      name: `Project ${i}`,
      sourceLocale: 'en',
      targetLocales: ['de'],
    });
  }
  await em.flush();
  await orm.close();

  return {
    service,
    databaseUrl,
    token: secret,
    accountId: account.id,
    handle: 'bench',
    async close() {
      await service.stop();
      await admin(serverUrl, `drop database if exists ${dbName} with (force)`);
      await embedded?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function admin(serverUrl: string, sql: string) {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  await client.query(sql);
  await client.end();
}

export interface Measurement {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

type Target = Omit<autocannon.Options, 'duration' | 'connections'>;

const ROUNDS = 3;
const ROUND_SECONDS = 5;

async function run(target: Target, duration: number) {
  return autocannon({ ...target, duration, connections: 10 });
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;

/**
 * Measures two targets against each other in alternating rounds (A B A B A B) after a warm-up of each
 * (JIT, connection pool, prepared plans), and reports the median of each: a burst of noise from the
 * machine then lands on both sides instead of deciding the ratio. Prints the table, every round's
 * ratio (the spread) and the median ratio against the aim.
 */
export async function compare(
  title: string,
  [nameA, targetA]: [string, Target],
  [nameB, targetB]: [string, Target],
  ratio: { label: string; aim: number },
): Promise<[Measurement, Measurement]> {
  await run(targetA, 2);
  await run(targetB, 2);
  const rounds: [autocannon.Result, autocannon.Result][] = [];
  for (let i = 0; i < ROUNDS; i++)
    rounds.push([await run(targetA, ROUND_SECONDS), await run(targetB, ROUND_SECONDS)]);
  const summarize = (name: string, side: 0 | 1): Measurement => ({
    name,
    requestsPerSecond: Math.round(median(rounds.map((r) => r[side].requests.average))),
    p50: median(rounds.map((r) => r[side].latency.p50)),
    p99: median(rounds.map((r) => r[side].latency.p99)),
    non2xx: rounds.reduce((sum, r) => sum + r[side].non2xx, 0),
  });
  const a = summarize(nameA, 0);
  const b = summarize(nameB, 1);

  console.log(`\n${title} (median of ${ROUNDS} alternating ${ROUND_SECONDS} s rounds, 10 connections)`);
  console.table(
    [a, b].map((m) => ({
      route: m.name,
      'req/s': m.requestsPerSecond,
      'p50 ms': m.p50,
      'p99 ms': m.p99,
      'non-2xx': m.non2xx,
    })),
  );
  const perRound = rounds.map(
    (r) => `${((r[1].requests.average / r[0].requests.average) * 100).toFixed(0)}%`,
  );
  const value = b.requestsPerSecond / a.requestsPerSecond;
  const verdict = value >= ratio.aim ? 'meets' : 'BELOW';
  console.log(
    `${ratio.label}: ${(value * 100).toFixed(1)}% (${verdict} the aim of ${ratio.aim * 100}%; rounds: ${perRound.join(', ')})`,
  );
  if (a.non2xx + b.non2xx > 0) {
    // Throughput of error answers (a 429 from a limiter, say) says nothing about the operation.
    console.warn('WARNING: non-2xx answers during the runs; these numbers do not measure the operation.');
  }
  return [a, b];
}

export type { Orm };
