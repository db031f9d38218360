import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { freePort } from './ports.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL server URL whose user may create databases; each suite makes its own. */
    serverUrl: string;
  }
}

// Uses the server at DATABASE_URL when set (CI: the machine's PostgreSQL); otherwise starts an embedded
// one for the run, so `npm test` needs nothing installed either.
export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('serverUrl', process.env.DATABASE_URL);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'l10n-test-pg-'));
  // As root, PostgreSQL runs as its own system user, which must be able to enter the folder.
  chmodSync(dir, 0o755);
  // The teardown below stops PostgreSQL. The package's own exit handlers must go: they would end the run
  // with process.exit() (a failed run would exit 0) or throw after it (a passed run would exit 1).
  const embedded = await startEmbeddedPostgres(dir, await freePort(), undefined, {
    callerShutsDown: true,
    keepExitHook: false,
  });
  project.provide('serverUrl', embedded.url);
  return async () => {
    await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
