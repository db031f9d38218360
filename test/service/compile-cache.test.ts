import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnInstance } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { freePort } from '../support/ports.ts';
import { sharedSecretsEnv } from '../support/service.ts';

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
  const port = await freePort();
  const instance = await spawnInstance('cached', port, {
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: database.url,
    NODE_COMPILE_CACHE: cacheDir,
    NODE_OPTIONS: `--import=${preload}`,
    ...sharedSecretsEnv,
  });
  expect((await fetch(`${instance.url}/readyz`)).status).toBe(200);
  await instance.stop();
  const report = /STRIPPER_LOADED=(true|false)/.exec(instance.output.join(''));
  expect(report, instance.output.join('')).not.toBeNull();
  return report![1] === 'true';
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
