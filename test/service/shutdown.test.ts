// SIGTERM under load, on the real process (`node src/main.mjs`): the service stops accepting, every request
// in flight (a 5,000-entry glossary save among them) is answered with its normal status, the pools close,
// an embedded PostgreSQL stops last, and the process exits 0 with no PostgreSQL left behind.

import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { GlossaryVersion, Project } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { createTestDatabase } from '../support/database.ts';
import { createTestUser } from '../support/fixtures.ts';
import { startRequest } from '../support/held-request.ts';
import { canConnect, freePort } from '../support/ports.ts';
import { sharedSecretsEnv } from '../support/service.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Child {
  process: ChildProcess;
  url: string;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `node src/main.mjs` with the Node that runs the tests (the project's Node 24); resolves once it listens. */
async function startChild(
  env: Record<string, string>,
  readyWhen = 'Localization service listening on',
): Promise<Child> {
  const port = await freePort();
  const child = spawn(process.execPath, ['src/main.mjs'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      SEED_DEMO: 'false',
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      ...sharedSecretsEnv,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own, as a service started from a terminal has: Ctrl-C signals the group.
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => done({ code, signal })),
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((ready, fail) => {
    const check = () => {
      if (output.includes(readyWhen)) ready();
    };
    child.stdout.on('data', check);
    void exited.then(({ code }) =>
      fail(new Error(`service exited with ${code} before listening:\n${output}`)),
    );
  });
  return { process: child, url: `http://127.0.0.1:${port}`, port, output: () => output, exited };
}

const glossaryEntries = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    term: `term ${i}`,
    definition: `Definition of term ${i}, long enough to be a real one.`,
    translations: { de: `Begriff ${i}`, fr: `terme ${i}` },
  }));

/**
 * Fires in-flight work at a running child, sends SIGTERM and checks the graceful path: refused new
 * connections, every request answered normally, exit 0. Returns what a database check needs.
 */
type Stop = (child: Child) => void;
const sigterm: Stop = (child) => child.process.kill('SIGTERM');
/** What Ctrl-C in a terminal does: SIGINT to every process of the foreground process group. */
const ctrlC: Stop = (child) => process.kill(-(child.process.pid ?? 0), 'SIGINT');

async function shutDownUnderLoad(child: Child, token: string, stop: Stop = sigterm) {
  const auth = { authorization: `Bearer ${token}` };
  const mcpHeaders = {
    ...auth,
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  const projects = '/api/v1/accounts/ada/projects';
  const project = (handle: string) => ({ handle, name: handle, sourceLocale: 'en' });
  const mcpCreate = (i: number) => ({
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: 'create_project', arguments: { account: 'ada', ...project(`mcp-${i}`) } },
  });

  // Held back by one byte: certainly in flight when the signal arrives, and processed after it.
  const held = [
    await startRequest(
      child.port,
      'PUT',
      '/api/v1/accounts/ada/glossary',
      auth,
      {
        changeNote: 'big save during shutdown',
        entries: glossaryEntries(5000),
      },
      true,
    ),
    await startRequest(child.port, 'POST', projects, auth, project('held-1'), true),
    await startRequest(child.port, 'POST', projects, auth, project('held-2'), true),
  ];
  // Sent in full: running (or already done) when the signal arrives.
  const sent = [
    ...(await Promise.all(
      [0, 1, 2, 3, 4].map((i) => startRequest(child.port, 'POST', projects, auth, project(`sent-${i}`))),
    )),
    ...(await Promise.all([0, 1, 2, 3].map(() => startRequest(child.port, 'GET', projects, auth)))),
    ...(await Promise.all(
      [0, 1, 2, 3].map((i) => startRequest(child.port, 'POST', '/mcp', mcpHeaders, mcpCreate(i))),
    )),
  ];
  // Connections are accepted in order: once a later one is answered, the service holds all of the above.
  const sentinel = await startRequest(child.port, 'GET', '/healthz', {});
  expect((await sentinel.answered).status).toBe(200);

  stop(child);
  // New connections are refused while the held requests are still waiting for their last byte.
  let attempts = 0;
  while (await canConnect(child.port)) {
    expect(++attempts).toBeLessThan(500);
    await new Promise((r) => setTimeout(r, 10));
  }

  const [glossary, ...heldProjects] = (await Promise.all(held.map((h) => h.finish()))) as [
    { status: number; body: unknown },
    ...{ status: number; body: unknown }[],
  ];
  const others = await Promise.all(sent.map((r) => r.answered));
  const { code, signal } = await child.exited;

  expect(glossary.status).toBe(201);
  expect((glossary.body as { entries: unknown[] }).entries).toHaveLength(5000);
  expect(heldProjects.map((p) => p.status)).toEqual([201, 201]);
  expect(others.map((o) => o.status)).toEqual([...Array(5).fill(201), ...Array(8).fill(200)]);
  // The MCP calls succeeded as tool calls, not only as HTTP.
  for (const o of others.slice(9))
    expect((o.body as { result: { isError?: boolean } }).result.isError).not.toBe(true);
  expect({ code, signal }).toEqual({ code: 0, signal: null });
  const logLines = child
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string; port?: number; host?: string });
  // In the order they were logged: "stopped" used to overtake "shutting down" at the exit.
  const lifecycle = ['listening', 'shutting down', 'stopped'];
  expect(logLines.map((l) => l.msg).filter((msg) => lifecycle.includes(msg))).toEqual(lifecycle);
  // Where it listens, which behind a load balancer is not its public URL.
  expect(logLines.find((l) => l.msg === 'listening')).toMatchObject({ port: child.port, host: '127.0.0.1' });
  expect(logLines.filter((l) => l.level >= 50)).toEqual([]);
}

/** Every acknowledged write is in the database. */
async function expectWritesKept(databaseUrl: string) {
  const orm = await openDatabase(databaseUrl);
  try {
    const em = orm.em.fork();
    const handles = (await em.find(Project, {}, { fields: ['handle'] })).map((p) => p.handle).sort();
    expect(handles).toEqual([
      'held-1',
      'held-2',
      'mcp-0',
      'mcp-1',
      'mcp-2',
      'mcp-3',
      'sent-0',
      'sent-1',
      'sent-2',
      'sent-3',
      'sent-4',
    ]);
    const versions = await em.find(GlossaryVersion, {});
    expect(versions).toHaveLength(1);
  } finally {
    await orm.close();
  }
}

// A fresh PostgreSQL cluster (initdb) and a process start per test: minutes on a busy machine, not seconds.
describe('graceful shutdown on SIGTERM under load', { timeout: 180_000 }, () => {
  it.each([
    ['SIGTERM', sigterm],
    ['Ctrl-C (SIGINT to the process group)', ctrlC],
  ] as const)(
    'on the embedded PostgreSQL default, %s: requests finish, exit 0, PostgreSQL stopped',
    async (_name, stop) => {
      const dataDir = mkdtempSync(join(tmpdir(), 'l10n-shutdown-'));
      chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as its own user, which must enter the folder
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const pgPort = await freePort();
      const child = await startChild({ DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort) });
      const databaseUrl = `postgresql://postgres:postgres@127.0.0.1:${pgPort}/localization`;
      const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
      const postgresPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      expect(postgresPid).toBeGreaterThan(0);

      const ada = await createTestUser(
        { url: child.url, database: { url: databaseUrl, drop: async () => {} } },
        'ada',
      );
      await shutDownUnderLoad(child, ada.token, stop);

      expect(existsSync(pidFile)).toBe(false);
      expect(() => process.kill(postgresPid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
      expect(await canConnect(pgPort)).toBe(false);

      // The data survived: the same cluster, started again, holds every acknowledged write.
      const again = await startEmbeddedPostgres(dataDir, pgPort);
      try {
        await expectWritesKept(databaseUrl);
      } finally {
        await again.stop();
      }
    },
  );

  it('on a second signal of the other kind, exits at once and still stops the embedded PostgreSQL', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'l10n-shutdown-'));
    chmodSync(dataDir, 0o755);
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const pgPort = await freePort();
    const child = await startChild({ DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort) });
    const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
    const postgresPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    // Held back by one byte, so the graceful shutdown is still waiting for it when the second signal comes.
    const held = await startRequest(child.port, 'POST', '/api/v1/accounts', {}, { x: 1 }, true);
    const cutOff = held.answered.catch(() => 'cut off');
    child.process.kill('SIGTERM');
    await expect.poll(() => child.output(), { timeout: 10_000 }).toContain('shutting down');
    child.process.kill('SIGINT');
    expect(await child.exited).toEqual({ code: 130, signal: null });
    expect(await cutOff).toBe('cut off');
    // PostgreSQL was told to stop on the way out (fast shutdown), in its own time.
    await expect
      .poll(
        () => {
          try {
            process.kill(postgresPid, 0);
            return true;
          } catch {
            return false;
          }
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe(false);
    expect(await canConnect(pgPort)).toBe(false);
  });

  it('during start-up (embedded PostgreSQL up, migrations next): waits for the start, then stops cleanly', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'l10n-shutdown-'));
    chmodSync(dataDir, 0o755);
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const pgPort = await freePort();
    const child = await startChild(
      { DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(pgPort) },
      'embedded PostgreSQL started',
    );
    const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
    const postgresPid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    child.process.kill('SIGTERM');
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(pidFile)).toBe(false);
    expect(() => process.kill(postgresPid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('on DATABASE_URL: requests finish, exit 0, no PostgreSQL started', async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const dataDir = mkdtempSync(join(tmpdir(), 'l10n-shutdown-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const child = await startChild({ DATA_DIR: dataDir, DATABASE_URL: database.url });

    const ada = await createTestUser({ url: child.url, database }, 'ada');
    await shutDownUnderLoad(child, ada.token);

    expect(existsSync(join(dataDir, 'postgres'))).toBe(false);
    await expectWritesKept(database.url);
  });
});
