import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startMainUntilReady } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';

// The README's first command as a newcomer runs it: no DATABASE_URL, so the service starts its embedded
// PostgreSQL, migrates, seeds the demo, and serves /readyz; a restart keeps the data.

const dataDir = mkdtempSync(join(tmpdir(), 'l10n-first-run-'));
chmodSync(dataDir, 0o755); // as root, PostgreSQL runs as its own user and must enter the folder
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
});

async function startMain(port: number, pgPort: number) {
  // vitest sets BASE_URL=/ (Vite's); a newcomer's shell has neither it nor DATABASE_URL.
  const { DATABASE_URL: _db, BASE_URL: _base, ...env } = process.env;
  const started = await startMainUntilReady(
    port,
    {
      ...env,
      NODE_ENV: 'development',
      PORT: String(port),
      DATA_DIR: dataDir,
      EMBEDDED_POSTGRES_PORT: String(pgPort),
      LOG_LEVEL: 'warn',
    },
    children,
  );
  // A service that never gets ready fails the test with its output.
  if (!started.ready) throw new Error(`service did not become ready:\n${started.output()}`);
  return started;
}

/** The lines of the output that are not JSON, besides the banner a newcomer is meant to read. */
function plainLines(output: string): string[] {
  const banner = /^(Localization service listening on |Demo data created\. | {2}curl -H )/;
  return output.split('\n').filter((line) => {
    if (line === '' || banner.test(line)) return false;
    try {
      JSON.parse(line);
      return false;
    } catch {
      return true;
    }
  });
}

async function countRows(pgPort: number, sql: string): Promise<number> {
  const client = new pg.Client({
    connectionString: `postgresql://postgres:postgres@127.0.0.1:${pgPort}/localization`,
  });
  await client.connect();
  try {
    const result = await client.query(sql);
    return Number(result.rows[0].count);
  } finally {
    await client.end();
  }
}

describe('first run on the embedded default', () => {
  it('starts with nothing installed, seeds the demo once, stops on SIGTERM and keeps data across restarts', async () => {
    const port = await freePort();
    const pgPort = await freePort();

    const first = await startMain(port, pgPort);
    expect(first.output()).toContain(`listening on http://localhost:${port}`);
    expect(await countRows(pgPort, `select count(*) from accounts where handle in ('demo', 'acme')`)).toBe(2);
    expect(await countRows(pgPort, 'select count(*) from projects')).toBe(1);
    // The demo token printed once on the terminal lets a newcomer call the API right away.
    const demoToken = /Bearer (l10n_\w+)/.exec(first.output())?.[1];
    expect(demoToken).toBeDefined();
    const accounts = await fetch(`http://127.0.0.1:${port}/api/v1/accounts`, {
      headers: { authorization: `Bearer ${demoToken}` },
    });
    expect(accounts.status).toBe(200);
    const body = (await accounts.json()) as { items: { handle: string }[] };
    expect(body.items.map((a) => a.handle).sort()).toEqual(['acme', 'demo']);
    // A token request: oidc-provider then parses a body our rate limiter read first, and writes a notice
    // about it. Like everything else the service writes, it must be a JSON log record (at debug, below
    // this run's level), never a plain line among them.
    const token = await fetch(`http://127.0.0.1:${port}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&refresh_token=unknown&client_id=unknown',
    });
    expect(token.status).toBe(401);
    expect(plainLines(first.output())).toEqual([]);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await startMain(port, pgPort);
    expect(await countRows(pgPort, 'select count(*) from users')).toBe(1);
    expect(await countRows(pgPort, 'select count(*) from glossary_entries')).toBe(2);
    expect(second.output()).not.toContain('l10n_');
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 180_000); // two cold starts of a PostgreSQL cluster on a 2-core machine shared with other suites
});
