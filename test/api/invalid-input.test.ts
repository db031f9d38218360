// Every write operation in openapi.yaml, found by walking the document (so a new one cannot be forgotten),
// gets malformed input aimed at real resources and must answer 400 problem+json with pointers to what was
// wrong, while the database stays exactly as it was. Aimed at real resources on purpose: if validation
// were skipped, the handler would find its target and write.

import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { loadCatalogue, type OpenApiDocument, type OperationSpec } from '../../src/api/catalogue.ts';

import { createTestOrganization, createTestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const catalogue = await loadCatalogue();
const writes = [...catalogue.operations.values()].filter((op) => op.method !== 'get');

const service = useService();
const db = useDatabaseClient(service);
const { ada } = useUsers(service, 'ada');
/** Path parameter values that name existing resources the caller may write. */
let realPath: Record<string, string>;

beforeAll(async () => {
  const bob = await createTestUser(service, 'bob');
  await createTestOrganization(service, 'guild', ada, { members: [bob] });
  const client = ada.client;
  const created = await Promise.all([
    sdk.createProject({
      client,
      path: { account: 'ada' },
      body: { handle: 'site', name: 'Site', sourceLocale: 'en' },
    }),
    sdk.createModel({
      client,
      path: { account: 'ada' },
      body: { handle: 'main', model: 'openai:gpt-4o', apiKey: 'sk-test-1234' },
    }),
    sdk.createToken({ client, path: { account: 'ada' }, body: { name: 'ci', scopes: ['project:read'] } }),
    sdk.createInvitation({ client, path: { org: 'guild' }, body: { email: 'grace@example.com' } }),
  ]);
  for (const result of created) expect(result.response.status, JSON.stringify(result.error)).toBe(201);
  realPath = {
    account: 'ada',
    org: 'guild',
    project: 'site',
    modelHandle: 'main',
    token: (created[2].data as { id: string }).id,
    user: 'bob',
    invitation: (created[3].data as { id: string }).id,
    clientId: 'some-client',
    identity: (
      (await db.query(`select id from identities where user_id = $1`, [ada.userId])).rows[0] as { id: string }
    ).id,
    domain: 'guild-domain.example',
  };
  // Using the token stamps its last-used time once; do that before the first snapshot.
  await sdk.getCurrentUser({ client });
});

/** Every row of every table, as one comparable value (a token's last-used stamp left out). */
async function snapshot(): Promise<Record<string, string>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`,
  );
  const result: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ digest: string }>(
      `select count(*) || ':' || coalesce(md5(string_agg(r, '|' order by r)), '') as digest
         from (select (to_jsonb(t) - 'last_used_at')::text as r from "${name}" t) rows`,
    );
    result[name] = rows[0]!.digest;
  }
  return result;
}

type Parameter = { name: string; in: string };
type SdkCall = (options: Record<string, unknown>) => Promise<{
  response: Response;
  error?: { status?: number; errors?: { pointer: string; message: string }[] };
}>;

function pathParameters(op: OperationSpec): string[] {
  const parameters = ((op.raw.parameters as unknown[]) ?? []).map(
    (p) => p as OpenApiDocument | undefined as Parameter,
  );
  return parameters.filter((p) => p.in === 'path').map((p) => p.name);
}

/** The operation's path parameters, each naming an existing resource. */
function realPathFor(op: OperationSpec): Record<string, string> {
  return Object.fromEntries(pathParameters(op).map((name) => [name, realPath[name]!]));
}

function exampleBody(op: OperationSpec): Record<string, unknown> | undefined {
  const body = op.raw.requestBody as OpenApiDocument | undefined;
  return body?.content?.['application/json']?.example;
}

async function call(op: OperationSpec, path: Record<string, string>, body: unknown) {
  const fn = (sdk as unknown as Record<string, SdkCall>)[op.operationId];
  expect(fn, `the SDK has ${op.operationId}`).toBeTypeOf('function');
  return fn!({ client: ada.client, path, ...(body === undefined ? {} : { body }) });
}

async function expectRejected(
  result: Awaited<ReturnType<typeof call>>,
  before: Record<string, string>,
  pointer: RegExp,
) {
  expect(result.response.status).toBe(400);
  expect(result.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(result.error?.status).toBe(400);
  expect(result.error?.errors?.length).toBeGreaterThan(0);
  for (const problem of result.error?.errors ?? []) expect(problem.pointer).toMatch(pointer);
  expect(await snapshot()).toEqual(before);
}

describe('a request with very many mistakes', () => {
  it('lists the first hundred, and says how many there are', async () => {
    const body: Record<string, unknown> = { handle: 'many', name: 'Many', sourceLocale: 'en' };
    for (let i = 0; i < 5000; i++) body[`extra${i}`] = i;
    const response = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { detail: string; errors: unknown[]; errorCount: number };
    expect(problem.errors).toHaveLength(100);
    expect(problem.detail).toBe('The request is not valid; see errors. (the first 100 of 5000)');
    // The count as a member of its own, for a client (or a page) to read without parsing the detail.
    expect(problem.errorCount).toBe(5000);
  });
});

describe('a value outside an enum', () => {
  it('is told the values it may take', async () => {
    const response = await fetch(`${service.url}/api/v1/accounts/ada/glossary/settings`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ enforcementMode: 'block' }),
    });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { errors: unknown[] };
    expect(problem.errors).toEqual([
      { pointer: '/body/enforcementMode', message: 'must be one of "off", "warn", "strict"' },
    ]);
  });
});

describe('a property a body may not have', () => {
  it('is named in the pointer as RFC 6901 writes it: a slash as ~1, a tilde as ~0, an empty name as such', async () => {
    const response = await fetch(`${service.url}/api/v1/accounts/ada/voice`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ localeOverrides: { de: { 'a/b~c': 'x' }, fr: { '': 'y' } } }),
    });
    expect(response.status).toBe(400);
    const problem = (await response.json()) as { errors: { pointer: string }[] };
    expect(problem.errors.map((error) => error.pointer).sort()).toEqual([
      '/body/localeOverrides/de/a~1b~0c',
      '/body/localeOverrides/fr/',
    ]);
  });
});

describe('a name of spaces only', () => {
  it('is refused as blank for an organization, a project and a profile, and nothing is stored', async () => {
    const post = (path: string, method: string, body: unknown) =>
      fetch(`${service.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const [path, method, body, pointer] of [
      ['/organizations', 'POST', { handle: 'blank-org', displayName: ' \t ' }, '/body/displayName'],
      ['/accounts/ada/projects', 'POST', { handle: 'blank', name: '   ', sourceLocale: 'en' }, '/body/name'],
      ['/user', 'PATCH', { displayName: '  ' }, '/body/displayName'],
    ] as const) {
      const refused = await post(path, method, body);
      expect(refused.status, path).toBe(400);
      expect(((await refused.json()) as { errors: unknown[] }).errors).toEqual([
        { pointer, message: 'must not be blank' },
      ]);
    }
    expect(await db.query(`select 1 from accounts where handle = 'blank-org'`).then((r) => r.rows)).toEqual(
      [],
    );
  });
});

describe('malformed input on every write operation', () => {
  it('covers every write operation of openapi.yaml', () => {
    expect(writes.length).toBeGreaterThanOrEqual(20);
    for (const op of writes) {
      for (const name of pathParameters(op))
        expect(realPath, `${op.operationId} {${name}}`).toHaveProperty(name);
    }
  });

  it.each(writes.filter((op) => exampleBody(op)).map((op) => [op.operationId, op] as const))(
    '%s: a body with a field the schema does not have answers 400 and changes nothing',
    async (_id, op) => {
      const before = await snapshot();
      const result = await call(op, realPathFor(op), { ...exampleBody(op), unexpectedField: true });
      await expectRejected(result, before, /^\/body\/unexpectedField$/);
    },
  );

  it.each(
    writes.flatMap((op) =>
      pathParameters(op).map((name) => [`${op.operationId} {${name}}`, op, name] as const),
    ),
  )('%s: a malformed path parameter answers 400 and changes nothing', async (_label, op, name) => {
    const before = await snapshot();
    const path = realPathFor(op);
    // Spaces, capitals and punctuation break every handle, UUID and identifier rule; 3,000 characters break
    // every length bound (the longest, an app's client ID, which may be a metadata document URL: 2,048).
    path[name] = `Not A Valid ${randomUUID()}!`.padEnd(3000, '!');
    const result = await call(op, path, exampleBody(op));
    await expectRejected(result, before, new RegExp(`^/params/${name}$`));
  });

  it.each(writes.filter((op) => exampleBody(op)).map((op) => [op.operationId, op] as const))(
    '%s: no body answers 400 at /body and changes nothing',
    async (_id, op) => {
      const before = await snapshot();
      const result = await call(op, realPathFor(op), undefined);
      await expectRejected(result, before, /^\/body$/);
      expect(JSON.stringify(result.error)).not.toContain('requestBody');
    },
  );

  it.each(writes.filter((op) => exampleBody(op)).map((op) => [op.operationId, op] as const))(
    '%s: its example body sent as anything but JSON answers 415 and changes nothing',
    async (_id, op) => {
      const before = await snapshot();
      const path = realPathFor(op);
      const url = `${service.url}${op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(path[name]!))}`;
      // fetch sends a string body as text/plain unless told otherwise: a mistake a browser app or script makes.
      for (const contentType of [
        'text/plain;charset=UTF-8',
        'application/x-www-form-urlencoded',
        undefined,
      ]) {
        const headers: Record<string, string> = { authorization: `Bearer ${ada.token}` };
        const body = new TextEncoder().encode(JSON.stringify(exampleBody(op)));
        if (contentType) headers['content-type'] = contentType;
        const response = await fetch(url, { method: op.method.toUpperCase(), headers, body });
        expect(response.status, String(contentType)).toBe(415);
        expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(await response.json()).toMatchObject({
          status: 415,
          type: expect.stringMatching(/unsupported-media-type$/),
        });
      }
      expect(await snapshot()).toEqual(before);
    },
  );
});
