// PostgreSQL that stops answering without closing anything (a network partition, a frozen host): here the
// test's own embedded server, frozen with SIGSTOP. Requests must answer 503 with Retry-After within the
// service's bounds (connect 5 s, statements 16 s), /readyz within its own 2 s, and the service must recover
// by itself once PostgreSQL answers again, and a shutdown must not wait for the statements of the requests
// it cut off. A hang fails the test by its timeout (no timed assertions).

import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { startTestService, type TestService } from '../support/service.ts';

let dir: string;
let postgres: EmbeddedDatabase;
let service: TestService;
let ada: TestUser;

/** The postmaster and every backend it forked (each connection is served by its own process). */
function postgresProcesses(): number[] {
  const postmaster = Number(readFileSync(join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so read after its ')'.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false; // ended meanwhile
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

let frozen: number[] = [];
function freeze() {
  frozen = postgresProcesses();
  for (const pid of frozen) process.kill(pid, 'SIGSTOP');
}
function resume() {
  for (const pid of frozen) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // already gone
    }
  }
  frozen = [];
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'l10n-frozen-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user, which must enter the folder
  postgres = await startEmbeddedPostgres(dir, await freePort());
  service = await startTestService({}, { database: { url: postgres.url, drop: async () => {} } });
  ada = await createTestUser(service, 'ada');
}, 60_000);
afterAll(async () => {
  resume(); // whatever happened, never leave PostgreSQL stopped
  await service?.close();
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

const projects = () =>
  fetch(`${service.url}/api/v1/accounts/ada/projects`, { headers: { authorization: `Bearer ${ada.token}` } });

describe('a database that stops answering', () => {
  it('serves normally before', async () => {
    // Several at once, so the pool holds idle connections when PostgreSQL freezes.
    const statuses = await Promise.all(Array.from({ length: 4 }, async () => (await projects()).status));
    expect(statuses).toEqual([200, 200, 200, 200]);
  });

  it('/readyz answers 503 within its bound', { timeout: 6_000 }, async () => {
    freeze();
    try {
      const ready = await fetch(`${service.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ status: 'unavailable', database: 'unreachable' });
    } catch (error) {
      resume();
      throw error;
    }
  });

  it('a REST request answers 503 with Retry-After within the statement bound', {
    timeout: 25_000,
  }, async () => {
    try {
      // On a connection the pool already holds (statement bound) and on a new one (connect bound).
      const [first, second] = await Promise.all([projects(), projects()]);
      for (const res of [first, second]) {
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toContain('application/problem+json');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
      // Once the held connections are dropped, a request meets the connect bound.
      const third = await projects();
      expect(third.status).toBe(503);
    } finally {
      resume();
    }
  });

  it('recovers without a restart once PostgreSQL answers again', { timeout: 25_000 }, async () => {
    resume();
    await expect.poll(async () => (await projects()).status, { timeout: 20_000, interval: 200 }).toBe(200);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it('a shutdown that cuts requests off does not wait for their statements', {
    timeout: 10_000,
  }, async () => {
    // An instance of its own (the suite's goes on), whose log is not scanned: the scan reads the database.
    const second = await startTestService(
      { SHUTDOWN_TIMEOUT_MS: '500' },
      { database: { url: postgres.url, drop: async () => {} }, logger: pino({ level: 'silent' }) },
    );
    const secondProjects = () =>
      fetch(`${second.url}/api/v1/accounts/ada/projects`, {
        headers: { authorization: `Bearer ${ada.token}` },
      });
    try {
      expect((await secondProjects()).status).toBe(200);
      freeze();
      const cutOff = secondProjects().catch((error: unknown) => error);
      // Once the request holds a connection and waits on its statement (16 s before pg gives up), the
      // shutdown waits 0.5 s for it, cuts it off, and must then close the pool without waiting for it.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await second.stop();
      expect(await cutOff).toBeInstanceOf(TypeError); // the connection closed without an answer
    } finally {
      resume();
    }
  });
});
