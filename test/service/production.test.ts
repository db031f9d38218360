// A production install from nothing: on a fresh database the administration command creates the first
// user, organization and token (and refuses bad input with a message and a non-zero exit); the service
// started with NODE_ENV=production, DATABASE_URL, its secrets and one provider offers that provider and no
// development sign-in; the token works on the REST API.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMainUntilReady } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { freePort } from '../support/ports.ts';
import { sharedSecretsEnv } from '../support/service.ts';

let database: TestDatabase;
const children: ChildProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await database?.drop();
});

/** A clean environment, as an operator's shell would have (vitest sets BASE_URL and others). */
function baseEnv(): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, BASE_URL: _b, NODE_ENV: _n, DEV_LOGIN: _l, ...env } = process.env;
  return env;
}

async function admin(args: string[], env: NodeJS.ProcessEnv = { DATABASE_URL: database.url }) {
  const child = spawn(process.execPath, ['src/cli/admin.ts', ...args], {
    env: { ...baseEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => {
    stdout += d;
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

// Each case starts a Node process (the command, then the service): slow on a loaded machine, not stuck.
describe('the first admin of a production install', { timeout: 180_000 }, () => {
  let token: string;

  it('creates the first user, organization and token on a fresh database', async () => {
    const user = await admin([
      'create-user',
      '--handle',
      'chief',
      '--email',
      'Chief@Example.com',
      '--identity',
      'github:1001',
    ]);
    expect(user, user.stderr).toMatchObject({ code: 0 });
    expect(user.stdout).toContain('Created user "chief"');
    const org = await admin(['create-org', '--handle', 'acme', '--admin', 'chief', '--name', 'Acme Inc.']);
    expect(org, org.stderr).toMatchObject({ code: 0 });
    const created = await admin(['create-token', '--user', 'chief', '--name', 'bootstrap', '--days', '7']);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    token = created.stdout.trim().split('\n').at(-1)!;
    expect(token).toMatch(/^l10n_/);
  });

  it('refuses bad input with a message and a non-zero exit', async () => {
    const cases: [string[], RegExp][] = [
      [[], /A command is required/],
      [['frobnicate'], /Unknown command "frobnicate"/],
      [['create-user', '--handle', 'Not Valid', '--email', 'a@b.example'], /not a usable handle/],
      [['create-user', '--handle', 'api', '--email', 'a@b.example'], /not a usable handle/],
      [['create-user', '--handle', 'someone', '--email', 'nope'], /--email must be an e-mail address/],
      [['create-user', '--handle', 'chief', '--email', 'x@example.com'], /Already taken/],
      [['create-user', '--handle', 'x1', '--email', 'x@example.com', '--bogus'], /Unknown option/],
      [
        ['create-user', '--handle', 'octo', '--email', 'o@example.com', '--identity', 'github:octocat'],
        /numeric GitHub user id/,
      ],
      [['create-org', '--handle', 'beta', '--admin', 'nobody'], /No user has the handle "nobody"/],
      [
        ['create-token', '--user', 'chief', '--name', 'x', '--scopes', 'project:read,root:all'],
        /Unknown scopes: root:all/,
      ],
      [['create-token', '--user', 'chief', '--name', 'x', '--scopes', ''], /--scopes names no scope/],
      [['create-token', '--user', 'chief', '--name', 'x', '--scopes', ' , '], /--scopes names no scope/],
      [['create-token', '--user', 'chief', '--name', 'x', '--days', '9999'], /--days must be/],
      [['create-token', '--user', 'chief', '--name', 'x', '--days', '0x10'], /--days must be/],
      [
        ['create-org', '--handle', 'gamma', '--admin', 'chief', '--name', 'Bell\u0007'],
        /--name contains the control character U\+0007/,
      ],
      [
        ['create-org', '--handle', 'gamma', '--admin', 'chief', '--name', 'x'.repeat(101)],
        /--name must be 1 to 100 characters/,
      ],
      [['create-token', '--user', 'chief', '--name', 'x', '--account', 'elsewhere'], /not an admin/],
    ];
    for (const [args, message] of cases) {
      const result = await admin(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stderr).not.toMatch(/at .*\.ts:\d+/); // a message, not a stack trace
    }
    const noDatabase = await admin(['migrate'], {});
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toContain('DATABASE_URL is required');
  });

  it('starts in production offering only the configured provider, and the token works on the API', async () => {
    const port = await freePort();
    const { child, ready, output } = await startMainUntilReady(
      port,
      {
        ...baseEnv(),
        NODE_ENV: 'production',
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        BASE_URL: `https://127.0.0.1:${port}`,
        LOG_LEVEL: 'warn',
        ...sharedSecretsEnv,
        GITHUB_CLIENT_ID: 'Iv1.production-test',
        GITHUB_CLIENT_SECRET: 'a-secret-from-github',
      },
      children,
    );
    const url = `http://127.0.0.1:${port}`;
    expect(ready, output()).toBe(true);

    const signin = await fetch(`${url}/signin`);
    expect(signin.status).toBe(200);
    const page = await signin.text();
    expect(page).toContain('Sign in with GitHub');
    expect(page).toContain('Sign in with your organization');
    expect(page).not.toContain('Sign in with Google');
    expect(page).not.toContain('Development sign-in');
    expect(page).not.toContain('name="handle"');
    const dev = await fetch(`${url}/signin/dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'handle=chief&create=1',
      redirect: 'manual',
    });
    expect(dev.status).toBe(404);
    // Off to the real GitHub (not contacted here) with PKCE and a state.
    const github = await fetch(`${url}/signin/github`, { redirect: 'manual' });
    expect(github.status).toBe(303);
    const location = new URL(github.headers.get('location')!);
    expect(location.origin + location.pathname).toBe('https://github.com/login/oauth/authorize');
    expect(location.searchParams.get('redirect_uri')).toBe(
      `https://127.0.0.1:${port}/signin/callback/github`,
    );
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(github.headers.getSetCookie().join()).toMatch(
      /l10n_signin=.*HttpOnly.*Secure|l10n_signin=.*Secure.*HttpOnly/i,
    );

    const me = await fetch(`${url}/api/v1/user`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ handle: 'chief', email: 'chief@example.com' });
    const orgs = await fetch(`${url}/api/v1/user/organizations`, {
      headers: { authorization: `Bearer ${token}` },
    });
    if (orgs.status === 200) expect(JSON.stringify(await orgs.json())).toContain('acme');
    child.kill('SIGTERM');
  });
});
