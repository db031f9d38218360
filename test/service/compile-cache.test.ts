import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startReports } from '../support/cluster.ts';

// src/compile-cache.mjs (npm's postinstall) fills Node's compile cache with every module, so that even the
// first start after an install never loads Node's TypeScript stripper, which would stay resident for the
// life of the process. Each start here gets a compile cache folder of its own, and a preloaded module
// reports at exit whether the stripper was loaded.

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);
const { work, report } = startReports(
  'STRIPPER_LOADED',
  `process.on('exit', () => process.stderr.write('STRIPPER_LOADED=' +
    process.moduleLoadList.some((name) => name.includes('amaro')) + '\\n'));\n`,
);

/** Starts the service on this cache folder, stops it, and says whether the stripper was loaded. */
async function startAndStop(cacheDir: string): Promise<boolean> {
  const loaded = await report({ NODE_COMPILE_CACHE: cacheDir });
  expect(loaded).toMatch(/^(true|false)$/);
  return loaded === 'true';
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
