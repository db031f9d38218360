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

export async function measure(
  name: string,
  options: Omit<autocannon.Options, 'duration' | 'connections'> & { duration?: number; connections?: number },
): Promise<Measurement> {
  // Warm-up: JIT, connection pool, prepared plans.
  await autocannon({ ...options, duration: 2, connections: options.connections ?? 10 });
  const result = await autocannon({ duration: 8, connections: 10, ...options });
  return {
    name,
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
}

export function report(
  title: string,
  rows: Measurement[],
  ratio: { label: string; value: number; aim: number },
) {
  console.log(`\n${title}`);
  console.table(
    rows.map((r) => ({
      route: r.name,
      'req/s': r.requestsPerSecond,
      'p50 ms': r.p50,
      'p99 ms': r.p99,
      'non-2xx': r.non2xx,
    })),
  );
  const verdict = ratio.value >= ratio.aim ? 'meets' : 'BELOW';
  console.log(
    `${ratio.label}: ${(ratio.value * 100).toFixed(1)}% (${verdict} the aim of ${ratio.aim * 100}%)`,
  );
}

export type { Orm };
