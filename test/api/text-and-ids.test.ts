// Data the database cannot hold or would store differently from what it was sent: NUL and other control
// characters, lone UTF-16 surrogates, ids in forms PostgreSQL refuses, cursors that are not our ids. Each
// must be a 400 naming the field, at every door, and nothing may be stored; these used to be 500s.

import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { findTextIssues } from '../../src/lib/text-input.ts';
import { jsonRpcOf, mcpClient, postMcp, toolProblemOf } from '../mcp/helpers.ts';
import { randomAddress, registerPublicClient } from '../oauth/helpers.ts';
import { startTestService } from '../support/service.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService(() => startTestService({ TRUST_PROXY: 'true' }));
const db = useDatabaseClient(service);
const { ada } = useUsers(service, 'ada');

beforeAll(async () => {
  const created = await sdk.createProject({
    client: ada.client,
    path: { account: 'ada' },
    body: { handle: 'site', name: 'Site', sourceLocale: 'en' },
  });
  expect(created.response.status).toBe(201);
});

async function rest(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${service.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function expectProblem(response: Response, pointer: string, message: RegExp = /./) {
  expect(response.status).toBe(400);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const problem = (await response.json()) as { errors: { pointer: string; message: string }[] };
  expect(problem.errors).toContainEqual({ pointer, message: expect.stringMatching(message) });
}

async function projectCount(): Promise<number> {
  const { rows } = await db.query<{ n: number }>('select count(*)::int as n from projects');
  return rows[0]!.n;
}

describe('the character rule', () => {
  it('refuses NUL, C0 controls and lone surrogates, keeps tab, newline, CR and paired surrogates', () => {
    for (const bad of ['a\u0000b', '\u0001', 'x\u001b[31m', '\u000b', '\ud800', 'a\udfffb', '\udc00\ud800'])
      expect(findTextIssues(bad, '/x'), JSON.stringify(bad)).toHaveLength(1);
    for (const good of ['tab\there', 'lines\r\nhere', 'emoji 😀', 'Grüße', '\u007f', ''])
      expect(findTextIssues(good, '/x'), JSON.stringify(good)).toEqual([]);
  });

  it('points at nested strings and object keys', () => {
    expect(findTextIssues({ a: [{ 'k\u0000': 'ok' }, 'x/\ud800'], 'b/c': '\u0000' }, '/body')).toEqual(
      expect.arrayContaining([
        { pointer: '/body/a/0/k\u0000', message: expect.stringMatching(/^its name contains .*U\+0000/) },
        { pointer: '/body/a/1', message: expect.stringMatching(/surrogate \(U\+D800\)/) },
        { pointer: '/body/b~1c', message: expect.stringMatching(/U\+0000/) },
      ]),
    );
  });

  it('walks a deeply nested value without overflowing the stack', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(findTextIssues(deep, '')).toHaveLength(1);
  });
});

describe('REST', () => {
  it('answers 400 with a pointer for NUL in a stored string, and stores nothing', async () => {
    const before = await projectCount();
    await expectProblem(
      await rest('POST', '/api/v1/accounts/ada/projects', {
        handle: 'nul',
        name: 'Bad\u0000name',
        sourceLocale: 'en',
      }),
      '/body/name',
      /U\+0000/,
    );
    expect(await projectCount()).toBe(before);
  });

  it('answers 400 for a lone surrogate rather than storing U+FFFD', async () => {
    await expectProblem(
      await rest('PATCH', '/api/v1/accounts/ada/projects/site', { description: 'half \ud83d of a smile' }),
      '/body/description',
      /surrogate/,
    );
    const { rows } = await db.query<{ description: string }>(
      "select description from projects where handle = 'site'",
    );
    expect(rows[0]!.description).toBe('');
  });

  it('answers 400 for NUL in an object key (glossary translations) and in a query string', async () => {
    const settings = await rest('GET', '/api/v1/accounts/ada/glossary');
    const etag = settings.headers.get('etag');
    const response = await fetch(`${service.url}/api/v1/accounts/ada/glossary`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${ada.token}`,
        'content-type': 'application/json',
        ...(etag ? { 'if-match': etag } : {}),
      },
      body: JSON.stringify({ entries: [{ term: 'Acme', translations: { 'de\u0000': 'Acme' } }] }),
    });
    await expectProblem(response, '/body/entries/0/translations/de\u0000', /^its name/);
    await expectProblem(await rest('GET', '/api/v1/accounts?cursor=%00'), '/query/cursor', /U\+0000/);
  });

  it('answers 400 for a cursor of 36 hex digits and hyphens that is not a UUID', async () => {
    for (const decoded of ['------------------------------------', 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaa-']) {
      const cursor = Buffer.from(decoded).toString('base64url');
      await expectProblem(
        await rest('GET', `/api/v1/accounts/ada/projects?cursor=${cursor}`),
        '/query/cursor',
      );
      await expectProblem(await rest('GET', `/api/v1/accounts?cursor=${cursor}`), '/query/cursor');
    }
  });

  it('takes a cursor only as the service handed it out, not one with characters added or changed', async () => {
    for (const handle of ['c1', 'c2']) {
      const created = await rest('POST', '/api/v1/accounts/ada/projects', {
        handle,
        name: handle,
        sourceLocale: 'en',
      });
      expect(created.status).toBe(201);
    }
    const first = (await (await rest('GET', '/api/v1/accounts/ada/projects?limit=1')).json()) as {
      nextCursor: string;
    };
    const { nextCursor } = first;
    expect((await rest('GET', `/api/v1/accounts/ada/projects?limit=1&cursor=${nextCursor}`)).status).toBe(
      200,
    );
    const upperCaseId = Buffer.from(Buffer.from(nextCursor, 'base64url').toString().toUpperCase()).toString(
      'base64url',
    );
    for (const tampered of [
      `${nextCursor}A`,
      `!${nextCursor}`,
      `${nextCursor}=`,
      `%20${nextCursor}`,
      upperCaseId,
    ]) {
      await expectProblem(
        await rest('GET', `/api/v1/accounts/ada/projects?limit=1&cursor=${tampered}`),
        '/query/cursor',
      );
    }
    // The glossary search's own cursor (version and position) is held to the same rule.
    const saved = await rest('PATCH', '/api/v1/accounts/ada/glossary/entries', {
      entries: [{ term: 'alpha' }, { term: 'beta' }],
    });
    expect(saved.status).toBe(201);
    const search = (await (await rest('GET', '/api/v1/accounts/ada/glossary/entries?limit=1')).json()) as {
      nextCursor: string;
    };
    expect(
      (await rest('GET', `/api/v1/accounts/ada/glossary/entries?limit=1&cursor=${search.nextCursor}`)).status,
    ).toBe(200);
    await expectProblem(
      await rest('GET', `/api/v1/accounts/ada/glossary/entries?limit=1&cursor=${search.nextCursor}~`),
      '/query/cursor',
    );
  });

  it('takes a cursor only from the list that handed it out: not another collection, not another account', async () => {
    const org = await rest('POST', '/api/v1/organizations', { handle: 'cursor-org', displayName: 'Cursors' });
    expect(org.status).toBe(201);
    for (const account of ['ada', 'cursor-org']) {
      for (const handle of ['k1', 'k2']) {
        const project = await rest('POST', `/api/v1/accounts/${account}/projects`, {
          handle,
          name: handle,
          sourceLocale: 'en',
        });
        expect(project.status).toBe(201);
      }
      for (const handle of ['m1', 'm2']) {
        const model = await rest('POST', `/api/v1/accounts/${account}/models`, {
          handle,
          model: 'openai:gpt-4o',
        });
        expect(model.status).toBe(201);
      }
    }
    const cursorOf = async (path: string) => {
      const listed = await rest('GET', `${path}?limit=1`);
      expect(listed.status).toBe(200);
      const { nextCursor } = (await listed.json()) as { nextCursor: string | null };
      expect(nextCursor).toEqual(expect.any(String));
      return nextCursor!;
    };
    const adaProjects = await cursorOf('/api/v1/accounts/ada/projects');
    const orgProjects = await cursorOf('/api/v1/accounts/cursor-org/projects');
    const adaModels = await cursorOf('/api/v1/accounts/ada/models');
    // Each works where it came from...
    for (const [path, cursor] of [
      ['/api/v1/accounts/ada/projects', adaProjects],
      ['/api/v1/accounts/cursor-org/projects', orgProjects],
      ['/api/v1/accounts/ada/models', adaModels],
    ] as const) {
      expect((await rest('GET', `${path}?limit=1&cursor=${cursor}`)).status).toBe(200);
    }
    // ...and nowhere else, where it used to page silently through the wrong rows (often to an empty page).
    for (const [path, cursor] of [
      ['/api/v1/accounts/cursor-org/projects', adaProjects],
      ['/api/v1/accounts/ada/models', adaProjects],
      ['/api/v1/organizations/cursor-org/members', orgProjects],
      ['/api/v1/accounts/ada/projects', adaModels],
      ['/api/v1/accounts', adaProjects],
    ] as const) {
      await expectProblem(await rest('GET', `${path}?cursor=${cursor}`), '/query/cursor', /another list/);
    }
    // A cursor made up from a bare id, as cursors were before they named their list, is not one either.
    const bareId = Buffer.from(Buffer.from(adaProjects, 'base64url').toString().split('.')[1]!).toString(
      'base64url',
    );
    await expectProblem(await rest('GET', `/api/v1/accounts/ada/projects?cursor=${bareId}`), '/query/cursor');
    // The same refusal over MCP, at the tool's argument.
    const client = await mcpClient(service, ada.token);
    const result = await client.callTool({
      name: 'list_members',
      arguments: { org: 'cursor-org', cursor: orgProjects },
    });
    expect(toolProblemOf(result)).toMatchObject({
      status: 400,
      errors: [{ pointer: '/arguments/cursor', message: expect.stringMatching(/another list/) }],
    });
    await client.close();
  });

  it('reads an integer in the query only when it is written in decimal digits', async () => {
    for (const limit of ['0x10', '1e1', '%201', '1.0', '0b11', '']) {
      await expectProblem(
        await rest('GET', `/api/v1/accounts/ada/projects?limit=${limit}`),
        '/query/limit',
        /decimal digits/,
      );
    }
    await expectProblem(await rest('GET', '/api/v1/accounts/ada/voice?version=0x1'), '/query/version');
    const page = await rest('GET', '/api/v1/accounts/ada/projects?limit=1');
    expect(page.status).toBe(200);
    expect(((await page.json()) as { items: unknown[] }).items).toHaveLength(1);
    // A value below the minimum is still the schema's to refuse, with its own message.
    await expectProblem(await rest('GET', '/api/v1/accounts/ada/projects?limit=-1'), '/query/limit', />=/);
  });

  it('answers 400 for an id written urn:uuid:…, and accepts the same id in upper case', async () => {
    const token = await sdk.createToken({
      client: ada.client,
      path: { account: 'ada' },
      body: { name: 'ci', scopes: ['project:read'] },
    });
    const id = (token.data as { id: string }).id;
    await expectProblem(
      await rest('DELETE', `/api/v1/accounts/ada/tokens/urn:uuid:${id}`),
      '/params/token',
      /uuid/,
    );
    const upper = await rest('DELETE', `/api/v1/accounts/ada/tokens/${id.toUpperCase()}`);
    expect(upper.status).toBe(204);
  });
});

describe('MCP', () => {
  it('answers a tool call with NUL in an argument with invalid params carrying the 400 problem', async () => {
    const client = await mcpClient(service, ada.token);
    try {
      const before = await projectCount();
      const refused = toolProblemOf(
        await client.callTool({
          name: 'create_project',
          arguments: { account: 'ada', handle: 'nul', name: 'Bad\u0000name', sourceLocale: 'en' },
        }),
      );
      expect(refused.status).toBe(400);
      expect(refused.errors).toContainEqual({
        pointer: '/arguments/name',
        message: expect.stringMatching(/U\+0000/),
      });
      expect(await projectCount()).toBe(before);
    } finally {
      await client.close();
    }
  });
});

describe('MCP params and arguments', () => {
  it('answers a tools/call whose name is not a string with invalid params, not an internal error', async () => {
    for (const params of [
      { name: null, arguments: {} },
      { name: 'list_accounts', arguments: [1] },
    ]) {
      const response = await postMcp(
        service,
        JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params }),
        { authorization: `Bearer ${ada.token}` },
      );
      expect(response.status).toBe(200);
      expect(await jsonRpcOf(response)).toMatchObject({ id: 7, error: { code: -32602 } });
    }
  });

  it('refuses an object or array where a path parameter goes, however deep, as invalid params', async () => {
    const depth = 50_000; // this array used to overflow the stack: JSON-RPC -32603, then HTTP 500
    const response = await postMcp(
      service,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_projects","arguments":{"account":${'['.repeat(depth)}${']'.repeat(depth)}}}}`,
      { authorization: `Bearer ${ada.token}` },
    );
    expect(response.status).toBe(200);
    const message = (await response.json()) as {
      id: number;
      error: { code: number; data: { status: number; errors: unknown[] } };
    };
    expect(message.id).toBe(1);
    expect(message.error.code).toBe(-32602);
    expect(message.error.data.status).toBe(400);
    expect(message.error.data.errors).toEqual([
      { pointer: '/arguments/account', message: 'is nested deeper than 64 levels' },
    ]);
    // Shallow enough, an array is still refused as what a path parameter cannot be.
    const shallow = await postMcp(
      service,
      `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_projects","arguments":{"account":${'['.repeat(64)}${']'.repeat(64)}}}}`,
      { authorization: `Bearer ${ada.token}` },
    );
    const text = await shallow.text();
    const data =
      text
        .split('\n')
        .find((line) => line.startsWith('data:'))
        ?.slice(5) ?? text;
    const refused = JSON.parse(data) as { result: { isError?: unknown; content?: unknown } };
    expect(toolProblemOf(refused.result).errors).toEqual([
      { pointer: '/arguments/account', message: 'must be a string' },
    ]);
  });
});

describe('OAuth endpoints', () => {
  it('treat a client_id with NUL as an unknown client, not a server error', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': randomAddress() };
    for (const [path, body] of [
      [
        '/oauth/token',
        'grant_type=authorization_code&client_id=app%00&code=x&code_verifier=x&redirect_uri=x',
      ],
      ['/oauth/revoke', 'client_id=app%00&token=x'],
    ] as const) {
      const response = await fetch(`${service.url}${path}`, { method: 'POST', headers: form, body });
      expect(response.status, path).toBe(401);
      expect(await response.json()).toMatchObject({ error: 'invalid_client' });
    }
    const authorize = await fetch(
      `${service.url}/oauth/authorize?client_id=app%00&response_type=code&scope=project:read`,
      { redirect: 'manual', headers: { 'x-forwarded-for': randomAddress() } },
    );
    expect(authorize.status).toBe(400);
  });

  it('send an authorization request with NUL in a stored parameter back to the client as invalid_request', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    for (const extra of ['state=%00', 'login_hint=a%00b']) {
      const query = new URLSearchParams({
        client_id: client.client_id,
        response_type: 'code',
        redirect_uri: redirectUri,
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuKEJfGYQsQ',
        code_challenge_method: 'S256',
        scope: 'project:read',
      });
      const response = await fetch(`${service.url}/oauth/authorize?${query}&${extra}`, {
        redirect: 'manual',
        headers: { 'x-forwarded-for': randomAddress() },
      });
      expect(response.status, extra).toBe(303);
      const location = new URL(response.headers.get('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
      expect(location.searchParams.get('error')).toBe('invalid_request');
    }
  });
});

describe('/oauth/register', () => {
  it('answers invalid_client_metadata naming the field for NUL or a lone surrogate in client_name', async () => {
    for (const name of ['Agent\u0000', 'Agent \udc00']) {
      const response = await fetch(`${service.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': randomAddress() },
        body: JSON.stringify({
          client_name: name,
          redirect_uris: ['http://127.0.0.1:7777/cb'],
          token_endpoint_auth_method: 'none',
        }),
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_client_metadata');
      expect(body.error_description).toMatch(/^client_name /);
    }
  });
});
