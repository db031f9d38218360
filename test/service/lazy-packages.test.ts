import { describe, expect, it } from 'vitest';
import { startReports } from '../support/cluster.ts';
import { REDIS_URL } from '../support/environment.ts';

// Packages only rare paths need are loaded on first use (src/lib/on-first-use.ts), so an instance that never
// takes those paths does not keep them resident. A preloaded module records every package Node resolves, by
// import or require, and reports the list when the instance exits.

const RARE = [
  'ioredis',
  'rate-limit-redis',
  'tldts',
  'free-email-domains-list',
  'openid-client',
  'csv-parse',
  'csv-stringify',
  'diff',
  'multer',
  'yaml',
];

const { report } = startReports(
  'PACKAGES_LOADED',
  `import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    const name = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(resolved.url ?? '')?.[1];
    if (name) loaded.add(name);
    return resolved;
  },
});
process.on('exit', () => process.stderr.write('PACKAGES_LOADED=' + JSON.stringify([...loaded]) + '\\n'));
`,
);

/** The packages a start of the service loaded. */
async function packagesLoaded(env: Record<string, string> = {}): Promise<Set<string>> {
  return new Set(JSON.parse(await report(env)) as string[]);
}

describe('packages of rare paths', () => {
  it('are not loaded by a start', async () => {
    const loaded = await packagesLoaded();
    // What every request needs is there: the recorder sees imports and requires alike.
    expect(loaded).toContain('express');
    expect(loaded).toContain('oidc-provider');
    expect(loaded).toContain('pg');
    expect(RARE.filter((name) => loaded.has(name))).toEqual([]);
  }, 60_000);

  it('are loaded when their path is configured: Redis counters with REDIS_URL', async () => {
    const loaded = await packagesLoaded({ REDIS_URL });
    expect(loaded).toContain('ioredis');
    expect(loaded).toContain('rate-limit-redis');
  }, 60_000);
});
