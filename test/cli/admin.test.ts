// The administration command (`npm run admin`) as an operator runs it: a Node process against DATABASE_URL.
// Its writes are audited like the service's own, it refuses what the API would refuse, and `migrate` says
// what it applied.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.ts';
import { createTestDatabase } from '../support/database.ts';
import { useDatabaseClient, useService } from '../support/suite.ts';

/** Runs the command (asynchronously: an in-process service shares this process) and returns how it ended. */
async function admin(databaseUrl: string | undefined, args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['src/cli/admin.ts', ...args], {
      cwd: join(import.meta.dirname, '..', '..'),
      // A clean environment, as an operator's shell would have (vitest sets BASE_URL and others).
      env: { PATH: process.env.PATH ?? '', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

// Each case starts a Node process: slow on a loaded machine, not stuck.
describe('npm run admin', { timeout: 120_000 }, () => {
  const service = useService();
  const db = useDatabaseClient(service);

  it('migrate names the migrations it applied, and says the schema is up to date only when there were none', async () => {
    const database = await createTestDatabase();
    try {
      const first = await admin(database.url, ['migrate']);
      expect(first, first.stderr).toMatchObject({ code: 0 });
      expect(first.stdout).toContain(`Applied: ${migrations.map((m) => m.name).join(', ')}`);
      expect(first.stdout).not.toContain('up to date');
      const second = await admin(database.url, ['migrate']);
      expect(second, second.stderr).toMatchObject({ code: 0 });
      expect(second.stdout.trim()).toBe('The schema is up to date.');
    } finally {
      await database.drop();
    }
  });

  it('records each change as an audit event (door cli) that the account log lists', async () => {
    const url = service.database.url;
    const steps = [
      ['create-user', '--handle', 'alice', '--email', 'alice@example.com', '--identity', 'github:583231'],
      ['create-org', '--handle', 'acme', '--admin', 'alice'],
      ['create-token', '--user', 'alice', '--name', 'boot'],
      [
        'create-token',
        '--user',
        'alice',
        '--name',
        'reader',
        '--account',
        'acme',
        '--scopes',
        'project:read',
      ],
    ];
    const outputs: string[] = [];
    for (const args of steps) {
      const result = await admin(url, args);
      expect(result, result.stderr).toMatchObject({ code: 0 });
      outputs.push(result.stdout);
    }
    const personalToken = outputs[2]!.trim().split('\n').at(-1)!;

    const { rows } = await db.query<{
      handle: string;
      actor: string;
      action: string;
      resource_type: string;
      resource_id: string;
      details: Record<string, unknown>;
    }>(
      `select a.handle, actor.handle as actor, e.action, e.resource_type, e.resource_id, e.details
         from audit_events e join accounts a on a.id = e.account_id
         join accounts actor on actor.user_id = e.actor_user_id and actor.kind = 'user'
        order by e.id`,
    );
    const { rows: ids } = await db.query<{ user_id: string; org_id: string; boot: string; reader: string }>(
      `select (select id from users) as user_id, (select id from organizations) as org_id,
              (select id from account_tokens where name = 'boot') as boot,
              (select id from account_tokens where name = 'reader') as reader`,
    );
    const id = ids[0]!;
    const cli = { door: 'cli' };
    expect(rows).toEqual([
      {
        handle: 'alice',
        actor: 'alice',
        action: 'user.create',
        resource_type: 'user',
        resource_id: id.user_id,
        details: { handle: 'alice', ...cli },
      },
      {
        handle: 'alice',
        actor: 'alice',
        action: 'identity.link',
        resource_type: 'identity',
        resource_id: expect.any(String),
        details: { provider: 'github', ...cli },
      },
      {
        handle: 'acme',
        actor: 'alice',
        action: 'organization.create',
        resource_type: 'organization',
        resource_id: id.org_id,
        details: { handle: 'acme', visibility: 'private', ...cli },
      },
      {
        handle: 'alice',
        actor: 'alice',
        action: 'token.create',
        resource_type: 'account_token',
        resource_id: id.boot,
        details: expect.objectContaining({ name: 'boot', tokenPrefix: expect.any(String), ...cli }),
      },
      {
        handle: 'acme',
        actor: 'alice',
        action: 'token.create',
        resource_type: 'account_token',
        resource_id: id.reader,
        details: expect.objectContaining({ name: 'reader', scopes: ['project:read'], ...cli }),
      },
    ]);
    // Never the secret.
    expect(JSON.stringify(rows)).not.toContain(personalToken);

    // And the organization's log, read through the API, lists them with their actor.
    const response = await fetch(`${service.url}/api/v1/accounts/acme/audit-events`, {
      headers: { Authorization: `Bearer ${personalToken}` },
    });
    expect(response.status).toBe(200);
    const { items } = (await response.json()) as {
      items: { action: string; resourceId: string; actor: { user: string | null }; door: string | null }[];
    };
    expect(
      items.map(({ action, resourceId, actor, door }) => ({ action, resourceId, actor: actor.user, door })),
    ).toEqual([
      { action: 'organization.create', resourceId: id.org_id, actor: 'alice', door: 'cli' },
      { action: 'token.create', resourceId: id.reader, actor: 'alice', door: 'cli' },
    ]);
  });

  it('refuses control characters in every free-text option and an e-mail the API would refuse, naming the option, and stores nothing', async () => {
    const url = service.database.url;
    const cases: [string[], RegExp][] = [
      [
        ['create-user', '--handle', 'gina', '--email', 'g\u0001\u001b[31m@example.com'],
        /--email contains the control character U\+0001/,
      ],
      [
        [
          'create-user',
          '--handle',
          'gina',
          '--email',
          'g@example.com',
          '--identity',
          'google:\u001b[2J\u0007',
        ],
        /--identity contains the control character U\+001B/,
      ],
      [
        ['create-user', '--handle', 'gina', '--email', 'g@example.com', '--identity', 'oidc:a\tb'],
        /--identity must be .*without control characters/,
      ],
      [
        ['create-user', '--handle', 'gina', '--email', 'g@example.com', '--identity', 'oidc:a\nb'],
        /--identity must be .*without control characters/,
      ],
      // As long as the API's own limit and no longer: 254 characters (an address the API could not show).
      [
        ['create-user', '--handle', 'gina', '--email', `${'a'.repeat(64)}@${'b'.repeat(186)}.com`],
        /--email must be at most 254 characters/,
      ],
      [
        ['create-org', '--handle', 'g\u001b[2Jx', '--admin', 'alice'],
        /--handle contains the control character U\+001B/,
      ],
      [
        ['create-token', '--user', 'alice', '--name', 'x', '--scopes', 'project:read\u0002'],
        /--scopes contains the control character U\+0002/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await admin(url, args);
      expect(result.code, JSON.stringify(args)).toBe(2);
      expect(result.stderr, JSON.stringify(args)).toMatch(message);
      expect(result.stderr).not.toContain('\u001b'); // the message does not repeat the value
    }
    const { rows } = await db.query(`select 1 from accounts where handle = 'gina'`);
    expect(rows).toEqual([]);
  });

  it('counts a token name in characters, as the API does: 100 emoji are a name, 101 are not', async () => {
    const url = service.database.url;
    const user = await admin(url, ['create-user', '--handle', 'emil', '--email', 'emil@example.com']);
    expect(user, user.stderr).toMatchObject({ code: 0 });
    const emoji = '\u{1F600}';
    const accepted = await admin(url, ['create-token', '--user', 'emil', '--name', emoji.repeat(60)]);
    expect(accepted, accepted.stderr).toMatchObject({ code: 0 });
    const longest = await admin(url, ['create-token', '--user', 'emil', '--name', emoji.repeat(100)]);
    expect(longest, longest.stderr).toMatchObject({ code: 0 });
    const { rows } = await db.query<{ name: string }>(
      `select name from account_tokens where name like '${emoji}%' order by length(name)`,
    );
    expect(rows.map((row) => [...row.name].length)).toEqual([60, 100]);
    const tooLong = await admin(url, ['create-token', '--user', 'emil', '--name', emoji.repeat(101)]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain('--name must be 1 to 100 characters');
    const missing = await admin(url, ['create-token', '--user', 'emil']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--name is required (1 to 100 characters)');
  });

  it('stores an e-mail with its domain in ASCII, the form invitations are sent to', async () => {
    const result = await admin(service.database.url, [
      'create-user',
      '--handle',
      'umlaut',
      '--email',
      'Uma@Bücher.example',
    ]);
    expect(result, result.stderr).toMatchObject({ code: 0 });
    const { rows } = await db.query(
      `select u.email from users u join accounts a on a.user_id = u.id where a.handle = 'umlaut'`,
    );
    expect(rows).toEqual([{ email: 'uma@xn--bcher-kva.example' }]);
  });
});
