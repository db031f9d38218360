// The embedded PostgreSQL of `npm start` must store text as UTF-8 with Unicode case rules wherever it starts.
// initdb takes its encoding from the environment's locale, and a bare container (or a service manager)
// often sets none: the cluster came out SQL_ASCII, where the schema's length checks count bytes and lower()
// knows only ASCII. Here the cluster is made by a process whose environment names no locale at all.

import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/ports.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'l10n-embedded-encoding-'));
chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user, which must enter the folder
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const script = `
import pg from 'pg';
import { startEmbeddedPostgres } from ${JSON.stringify(join(ROOT, 'src/db/embedded.ts'))};
const db = await startEmbeddedPostgres(process.argv[1], Number(process.argv[2]));
const client = new pg.Client({ connectionString: db.url });
await client.connect();
const { rows } = await client.query(
  "select current_setting('server_encoding') as encoding, length('東京😀') as length, lower('ÜBER ΟΔΟΣ') as lower",
);
await client.end();
await db.stop();
console.log(JSON.stringify(rows[0]));
`;

describe('the embedded PostgreSQL', () => {
  it('stores text as UTF-8 with Unicode case rules when the environment names no locale', {
    timeout: 60_000,
  }, async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script, join(dir, 'cluster'), String(await freePort())],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      encoding: 'UTF8',
      length: 3,
      lower: 'über οδοσ',
    });
  });
});
