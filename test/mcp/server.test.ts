import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { ALL_SCOPES, DEFAULT_OAUTH_SCOPES } from '../../src/authz/scopes.ts';
import { useService, useUsers } from '../support/suite.ts';
import { issueToken, jsonRpcOf, mcpClient, postMcp, postModern, toolProblemOf } from './helpers.ts';

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');
let adaMcp: Client;
let adaReadOnly: string;
let metadataUrl: string;

beforeAll(async () => {
  adaReadOnly = await issueToken(service, 'ada', DEFAULT_OAUTH_SCOPES);
  adaMcp = await mcpClient(service, ada.token);
  metadataUrl = `${service.url}/.well-known/oauth-protected-resource/mcp`;
});
afterAll(async () => {
  await adaMcp?.close();
});

describe('MCP server at /mcp', () => {
  it('introduces itself with instructions and lists tools derived from openapi.yaml', async () => {
    expect(adaMcp.getServerVersion()?.name).toBe('l10n');
    expect(adaMcp.getInstructions()).toMatch(/list_accounts/);
    const { tools } = await adaMcp.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect([...byName.keys()]).toEqual(
      expect.arrayContaining(['list_accounts', 'list_projects', 'create_project']),
    );

    const create = byName.get('create_project')!;
    expect(create.inputSchema.required).toEqual(['account', 'handle', 'name', 'sourceLocale']);
    expect(create.inputSchema.properties).toHaveProperty('targetLocales');
    expect(JSON.stringify(create.inputSchema)).not.toContain('$ref');
    expect(create.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    });
    expect(create.description).toMatch(/project:write/);
    expect(create.description).toMatch(/call list_accounts first/);
    expect(byName.get('list_projects')!.annotations).toMatchObject({
      readOnlyHint: true,
      idempotentHint: true,
    });
    for (const tool of tools) expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/);
  });

  it('creates a project through tools/call, visible through the REST API', async () => {
    const result = await adaMcp.callTool({
      name: 'create_project',
      arguments: {
        account: 'ada',
        handle: 'docs',
        name: 'Docs',
        sourceLocale: 'en-us',
        targetLocales: ['de'],
      },
    });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ account: 'ada', handle: 'docs', sourceLocale: 'en-US' });
    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);

    const rest = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'docs' } });
    expect(rest.response.status).toBe(200);
    expect(rest.data).toEqual(result.structuredContent);
  });

  it('returns outputs that validate against each outputSchema (checked by the SDK client)', async () => {
    // The client validates structuredContent of the tools it has listed; list first. (tour.test.ts
    // calls every tool.)
    await adaMcp.listTools();
    const calls: [string, Record<string, unknown>][] = [
      ['list_accounts', {}],
      ['list_accounts', { limit: 1 }],
      ['get_account', { account: 'ada' }],
      ['list_projects', { account: 'ada' }],
      ['get_project', { account: 'ada', project: 'docs' }],
      ['update_project', { account: 'ada', project: 'docs', targetLocales: ['de', 'fr'] }],
    ];
    for (const [name, args] of calls) {
      const result = await adaMcp.callTool({ name, arguments: args });
      expect(result.isError, `${name} ${JSON.stringify(result.content)}`).toBeFalsy();
      expect(result.structuredContent, name).toBeDefined();
    }
  });

  it('reports invalid arguments as a tool error the model can read, pointing at the arguments, and stores nothing', async () => {
    const invalidParams = async (args: Record<string, unknown>) => {
      const result = await adaMcp.callTool({ name: 'create_project', arguments: args });
      const problem = toolProblemOf(result);
      expect(problem.status).toBe(400);
      expect(problem.detail).toMatch(/^Invalid arguments for tool create_project: \/arguments\/\w+: /);
      return problem.errors!.map((e) => e.pointer);
    };
    expect(
      await invalidParams({ account: 'ada', handle: 'Not A Handle', name: 'X', sourceLocale: 'en' }),
    ).toContain('/arguments/handle');
    expect(
      await invalidParams({ account: 'ada', handle: 'extra', name: 'X', sourceLocale: 'en', colour: 'blue' }),
    ).toContain('/arguments/colour');
    // An unknown tool is still the request's fault: a JSON-RPC error.
    const unknown = await adaMcp.callTool({ name: 'no_such_tool', arguments: {} }).catch((e) => e);
    expect(unknown).toBeInstanceOf(McpError);
    expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams);

    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data?.items.map((p) => p.handle)).toEqual(['docs']);
  });

  it('words its errors and descriptions in tools and arguments, not operationIds and HTTP headers', async () => {
    const fresh = await mcpClient(service, await issueToken(service, 'bob', ALL_SCOPES));
    try {
      // Nothing saved yet: the error says which tool saves the first version.
      const missing = toolProblemOf(
        await fresh.callTool({ name: 'get_voice', arguments: { account: 'bob' } }),
      );
      expect(missing.status).toBe(404);
      expect(missing.detail).toContain('save_voice saves the first version');
      expect(missing.detail).not.toContain('saveVoice');
      // A stale if_match: named as the argument the agent sent.
      const voice = {
        account: 'bob',
        tone: 'Plain',
        formality: 'neutral',
        targetAudience: 'All',
        guidelines: '',
      };
      expect((await fresh.callTool({ name: 'save_voice', arguments: voice })).isError).toBeFalsy();
      const stale = toolProblemOf(
        await fresh.callTool({ name: 'save_voice', arguments: { ...voice, if_match: '"v0"' } }),
      );
      expect(stale.detail).toContain('your if_match is');
      expect(stale.detail).not.toContain('If-Match');
      // A conditional read's argument describes what the tool answers, not REST's 304.
      const { tools } = await fresh.listTools();
      const ifNoneMatch = tools.find((tool) => tool.name === 'get_voice')!.inputSchema.properties!
        .if_none_match as {
        description: string;
      };
      expect(ifNoneMatch.description).toContain('notModified');
      expect(ifNoneMatch.description).not.toContain('304');
      // A pointer in a description names the argument, as the tool's errors do.
      const createToken = tools.find((tool) => tool.name === 'create_token')!;
      expect(createToken.description).toContain('/arguments/expiresInDays');
      const described = JSON.stringify(tools);
      expect(described).not.toMatch(/\/(body|query|params)\/\w/);
    } finally {
      await fresh.close();
    }
  });

  it('points at the arguments in a tool error of any status, not only a 400', async () => {
    // A token that may create tokens but holds no project scope: a token asking for one is a 403 whose
    // pointer names the `scopes` argument the agent sent, not REST's /body/scopes.
    const narrow = await mcpClient(
      service,
      await issueToken(service, 'ada', ['token:write', 'account:read']),
    );
    try {
      const result = await narrow.callTool({
        name: 'create_token',
        arguments: { account: 'ada', name: 'wider', scopes: ['project:delete'] },
      });
      const problem = toolProblemOf(result);
      expect(problem.status).toBe(403);
      expect(problem.errors?.map((e) => e.pointer)).toEqual(['/arguments/scopes']);
    } finally {
      await narrow.close();
    }
  });

  it('refuses a path, query or header argument whose JSON type is not the one inputSchema names, as REST does', async () => {
    // REST coerces its text (`limit=2`), but refuses `limit=true`; a typed argument is not coerced either:
    // `limit: true` was read as 1, `doNotTranslate: 1` as true, `if_match: 5` sent as the tag 5.
    const rest = await fetch(`${service.url}/api/v1/accounts/ada/projects?limit=true`, {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(rest.status).toBe(400);
    for (const [name, args, pointer, message] of [
      ['list_projects', { account: 'ada', limit: true }, '/arguments/limit', 'must be integer'],
      ['list_projects', { account: 'ada', limit: '5' }, '/arguments/limit', 'must be integer'],
      ['list_projects', { account: 'ada', cursor: 5 }, '/arguments/cursor', 'must be string'],
      [
        'search_glossary_entries',
        { account: 'ada', doNotTranslate: 1 },
        '/arguments/doNotTranslate',
        'must be boolean',
      ],
      ['get_project', { account: 'ada', project: 7 }, '/arguments/project', 'must be string'],
      ['save_voice', { account: 'ada', if_match: 5, tone: 'x' }, '/arguments/if_match', 'must be string'],
    ] as const) {
      const result = await adaMcp.callTool({ name, arguments: args });
      expect(toolProblemOf(result).errors, `${name} ${JSON.stringify(args)}`).toEqual([{ pointer, message }]);
    }
    // The types inputSchema names still pass, and null still means "not given".
    const page = await adaMcp.callTool({
      name: 'list_projects',
      arguments: { account: 'ada', limit: 1, cursor: null },
    });
    expect(page.isError).toBeFalsy();
  });

  it("refuses another user's private account as the REST API does", async () => {
    const bobMcp = await mcpClient(service, bob.token);
    try {
      const read = await bobMcp.callTool({ name: 'list_projects', arguments: { account: 'ada' } });
      expect(read.isError).toBe(true);
      expect(read.structuredContent).toBeUndefined();
      const rest = await sdk.listProjects({ client: bob.client, path: { account: 'ada' } });
      expect(toolProblemOf(read).status).toBe(rest.response.status);
      expect(toolProblemOf(read).status).toBe(404);

      const write = await bobMcp.callTool({
        name: 'create_project',
        arguments: { account: 'ada', handle: 'intruder', name: 'X', sourceLocale: 'en' },
      });
      expect(write.isError).toBe(true);
      expect(toolProblemOf(write).status).toBe(404);
      const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
      expect(list.data?.items.map((p) => p.handle)).not.toContain('intruder');
    } finally {
      await bobMcp.close();
    }
  });
});

describe('scopes at /mcp', () => {
  it('lists only the tools whose scope the token holds', async () => {
    const reader = await mcpClient(service, adaReadOnly);
    try {
      const full = (await adaMcp.listTools()).tools;
      const readOnly = (await reader.listTools()).tools;
      expect(readOnly.length).toBeGreaterThan(0);
      expect(readOnly.length).toBeLessThan(full.length);
      expect(readOnly.every((tool) => tool.annotations?.readOnlyHint === true)).toBe(true);
      expect(readOnly.map((t) => t.name)).not.toContain('create_project');
      expect(full.map((t) => t.name)).toContain('create_project');
    } finally {
      await reader.close();
    }
  });

  it('answers a write call with a read-only token with HTTP 403 and a step-up challenge', async () => {
    const reader = await mcpClient(service, adaReadOnly);
    try {
      const error = await reader
        .callTool({
          name: 'create_project',
          arguments: { account: 'ada', handle: 'nope', name: 'N', sourceLocale: 'en' },
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StreamableHTTPError);
      expect((error as StreamableHTTPError).code).toBe(403);
    } finally {
      await reader.close();
    }
    const response = await postMcp(
      service,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'create_project',
          arguments: { account: 'ada', handle: 'nope', name: 'N', sourceLocale: 'en' },
        },
      },
      { Authorization: `Bearer ${adaReadOnly}` },
    );
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="project:write", resource_metadata="${metadataUrl}"`,
    );
    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data?.items.map((p) => p.handle)).not.toContain('nope');
  });

  it('challenges a request without a token, or with an invalid one, with 401 and the resource metadata', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const anonymous = await postMcp(service, initialize);
    expect(anonymous.status).toBe(401);
    const challenge = anonymous.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer /);
    expect(challenge).toContain(`resource_metadata="${metadataUrl}"`);
    const scope = /scope="([^"]+)"/.exec(challenge)![1]!.split(' ');
    expect(scope).toEqual(expect.arrayContaining(['account:read', 'project:read', 'project:write']));
    expect(scope.every((s) => (ALL_SCOPES as string[]).includes(s))).toBe(true);

    const invalid = await postMcp(service, initialize, { Authorization: 'Bearer l10n_not_a_real_token' });
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get('www-authenticate')).toContain('error="invalid_token"');

    const viaSdk = await mcpClient(service).catch((e: unknown) => e);
    expect(viaSdk).toBeInstanceOf(Error);
    expect(String(viaSdk)).toMatch(/401/);
  });
});

describe('HTTP details of /mcp', () => {
  const auth = () => ({ Authorization: `Bearer ${ada.token}` });

  it('is stateless: no session id, and GET or DELETE answer 405', async () => {
    const response = await postMcp(service, { jsonrpc: '2.0', id: 7, method: 'tools/list' }, auth());
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    // The legacy path answers as an SSE stream of one message when the client accepts one.
    const body = await jsonRpcOf(response);
    expect(body.id).toBe(7);
    expect(body.result.tools.length).toBeGreaterThan(0);

    for (const method of ['GET', 'DELETE']) {
      const other = await fetch(`${service.url}/mcp`, { method, headers: auth() });
      expect(other.status).toBe(405);
      expect(other.headers.get('allow')).toBe('POST');
    }
  });

  it('refuses a tools/list cursor, at either revision: it hands out none', async () => {
    // The SDK ignored one and answered the first page, which an agent would take for the next.
    const legacy = await jsonRpcOf(
      await postMcp(
        service,
        { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { cursor: 'bogus' } },
        auth(),
      ),
    );
    const modern = await jsonRpcOf(
      await postModern(service, { id: 9, method: 'tools/list', params: { cursor: 'bogus' } }, auth()),
    );
    for (const answer of [legacy, modern]) {
      expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/Invalid cursor/) });
      expect(answer.result).toBeUndefined();
    }
    // Without one, the list as before.
    const plain = await jsonRpcOf(await postModern(service, { id: 10, method: 'tools/list' }, auth()));
    expect(plain.result.tools.length).toBeGreaterThan(0);
  });

  it('refuses foreign origins (DNS rebinding) and answers CORS for local ones', async () => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const foreign = await postMcp(service, list, { ...auth(), Origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();

    const local = await postMcp(service, list, { ...auth(), Origin: 'http://localhost:6274' });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    expect(local.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/);
    expect(local.headers.get('access-control-expose-headers')).toMatch(/Mcp-Session-Id/);

    const own = await postMcp(service, list, { ...auth(), Origin: new URL(service.url).origin });
    expect(own.status).toBe(200);

    const preflight = await fetch(`${service.url}/mcp`, {
      method: 'OPTIONS',
      headers: {
        Origin: 'http://127.0.0.1:6274',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type, mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:6274');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    // Only what this server answers: GET and DELETE are 405 here, so a preflight does not offer them.
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');

    const unauthenticated = await postMcp(service, list, { Origin: 'http://localhost:6274' });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/);
  });

  /** A POST to /mcp whose body is `body` as it is, whatever it holds. */
  const postText = (body: string) =>
    fetch(`${service.url}/mcp`, {
      method: 'POST',
      headers: {
        ...auth(),
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body,
    });

  it('answers a body that is not JSON with a JSON-RPC parse error', async () => {
    const response = await postText('{not json');
    expect(response.status).toBe(400);
    expect((await response.json()).error.code).toBe(-32700);
  });

  it('answers JSON that is no message (a number, a string, null) with invalid request, not a parse error', async () => {
    for (const body of ['5', '"x"', 'null', ' true']) {
      const response = await postText(body);
      expect(response.status, body).toBe(400);
      expect((await response.json()).error, body).toMatchObject({
        code: -32600,
        message: 'The body is JSON but neither an object nor an array.',
      });
    }
  });
});
