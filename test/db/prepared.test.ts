// The reads of every request go out as prepared statements (src/db/prepared.ts). What that must not change:
// the answers, with the setting on or off, and a running instance's answers after a migration from a newer
// version adds columns under it (a prepared `select *` would fail from then on).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { prepared } from '../../src/db/prepared.ts';
import { createTestUser } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { recordStatements, type StatementRecorder } from '../support/statement-recorder.ts';
import { useDatabaseClient, useService } from '../support/suite.ts';

describe('prepared()', () => {
  it('numbers the placeholders in order and names the statement after its text', () => {
    const statement = prepared('select id from projects where account_id = ? and id > ? limit ?');
    expect(statement.numbered).toBe('select id from projects where account_id = $1 and id > $2 limit $3');
    expect(statement.text).toBe('select id from projects where account_id = ? and id > ? limit ?');
    expect(prepared(statement.text).name).toBe(statement.name);
    expect(prepared('select id from projects where account_id = ?').name).not.toBe(statement.name);
  });
});

// The service runs in this process on the same `pg` module: what it sends is seen at the driver.
let recorder: StatementRecorder | undefined;
beforeAll(() => {
  recorder = recordStatements();
  recorder.start();
});
afterAll(() => recorder?.restore());

describe.each([
  ['on', {}],
  ['off', { DATABASE_PREPARED_STATEMENTS: 'false' }],
])('with prepared statements %s', (setting, env) => {
  const service = useService(() => startTestService(env));
  const db = useDatabaseClient(service);

  /**
   * The recorded statements whose text matches, at least one: each named (prepared) with the setting on,
   * unnamed with it off.
   */
  const namedAsSet = (pattern: RegExp) => {
    const statements = recorder!.sent.filter((statement) => pattern.test(statement.text));
    expect(statements.length).toBeGreaterThan(0);
    for (const statement of statements) {
      if (setting === 'on') expect(statement.name).toMatch(/^s/);
      else expect(statement.name).toBeUndefined();
    }
    return statements;
  };

  it('looks up a token the verified-caller cache does not hold, and an OAuth model, as named statements', async () => {
    const grace = await createTestUser(service, `grace${setting}`);
    const { sent } = recorder!;
    sent.length = 0;
    // A token just made in the database: its first request is the cold look-up.
    const me = await sdk.getCurrentUser({ client: grace.client });
    expect(me.response.status).toBe(200);
    // An authorization request looks its client up through the OAuth storage.
    const authorize = await fetch(
      `${service.url}/oauth/authorize?client_id=no-such-client&response_type=code`,
      {
        redirect: 'manual',
      },
    );
    expect(authorize.status).toBe(400);
    namedAsSet(/from account_tokens t join accounts a .* where t\.token_hash = \$1/s);
    namedAsSet(/from oidc_models where model = \$1 and id = \$2/);
  });

  it('lists pages the same before and after a migration adds columns under the running service', async () => {
    const ada = await createTestUser(service, `ada${setting}`);
    for (const handle of ['one', 'two', 'three']) {
      const created = await sdk.createProject({
        client: ada.client,
        path: { account: ada.handle },
        body: { handle, name: handle, sourceLocale: 'en' },
      });
      expect(created.response.status).toBe(201);
    }
    const pages = async () => {
      const first = await sdk.listProjects({
        client: ada.client,
        path: { account: ada.handle },
        query: { limit: 2 },
      });
      expect(first.response.status).toBe(200);
      const next = await sdk.listProjects({
        client: ada.client,
        path: { account: ada.handle },
        query: { limit: 2, cursor: first.data!.nextCursor! },
      });
      expect(next.response.status).toBe(200);
      return [...first.data!.items, ...next.data!.items].map((project) => project.handle);
    };

    const { sent } = recorder!;
    sent.length = 0;
    expect(await pages()).toEqual(['one', 'two', 'three']);
    for (const statement of namedAsSet(/from accounts a where a\.handle/)) {
      // Placeholders are numbered for PostgreSQL either way; only the name makes it prepared.
      expect(statement.text).toContain('a.handle = $2');
    }

    await db.query('alter table accounts add column added_by_a_newer_version integer');
    await db.query('alter table projects add column added_by_a_newer_version integer');
    expect(await pages()).toEqual(['one', 'two', 'three']);
  });
});
