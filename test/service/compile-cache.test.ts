import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportOfOneStart } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';

// src/compile-cache.mjs (npm's postinstall) fills Node's compile cache with every module, so that even the
// first start after an install never loads Node's TypeScript stripper, which would stay resident for the
// life of the process. Each start here gets a compile cache folder of its own, and a preloaded module
// reports at exit whether the stripper was loaded.

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const work = mkdtempSync(join(tmpdir(), 'l10n-compile-cache-'));
const preload = join(work, 'report-stripper.mjs');
writeFileSync(
  preload,
  `process.on('exit', () => process.stderr.write('STRIPPER_LOADED=' +
    process.moduleLoadList.some((name) => name.includes('amaro')) + '\\n'));\n`,
);
let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
  rmSync(work, { recursive: true, force: true });
});

/** Starts `node src/main.mjs` on this cache folder, stops it, and says whether the stripper was loaded. */
async function startAndStop(cacheDir: string): Promise<boolean> {
  const report = await reportOfOneStart({
    databaseUrl: database.url,
    preload,
    marker: 'STRIPPER_LOADED',
    env: { NODE_COMPILE_CACHE: cacheDir },
  });
  expect(report).toMatch(/^(true|false)$/);
  return report === 'true';
}

describe('the compile cache filled at install', () => {
  it('a first start on an empty cache loads the TypeScript stripper', async () => {
    expect(await startAndStop(join(work, 'empty'))).toBe(true);
  }, 60_000);

  it('after src/compile-cache.mjs, the first start never loads it', async () => {
    const cacheDir = join(work, 'filled');
    const { stdout } = await run(process.execPath, ['src/compile-cache.mjs'], {
      cwd: ROOT,
      env: { ...process.env, NODE_COMPILE_CACHE: cacheDir },
    });
    expect(stdout).toMatch(/compile cache: \d+ modules in /);
    expect(stdout).not.toMatch(/skipped/);
    expect(await startAndStop(cacheDir)).toBe(false);
  }, 60_000);
});
