import { type Client as ModernClient, ProtocolError } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { useService, useUsers } from '../support/suite.ts';
import { jsonRpcOf, MODERN_REVISION, mcpClient, modernClient, postModern, toolProblemOf } from './helpers.ts';

// The 2026-07-28 revision (stateless: no initialize, a `_meta` envelope per request, server/discover,
// Mcp-Method/Mcp-Name headers, ttlMs/cacheScope) and the 2025-era clients, served by one definition.

const service = useService();
const { ada } = useUsers(service, 'ada');
let modern: ModernClient;

beforeAll(async () => {
  modern = await modernClient(service, ada.token);
});
afterAll(async () => {
  await modern?.close();
});

const auth = () => ({ Authorization: `Bearer ${ada.token}` });

describe('the v2 SDK client pinned to 2026-07-28', () => {
  it('connects on the modern era and lists the tools', async () => {
    expect(modern.getProtocolEra()).toBe('modern');
    expect(modern.getServerVersion()?.name).toBe('l10n');
    const { tools } = await modern.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['list_accounts', 'create_project', 'get_glossary']),
    );
  });

  it('calls a read tool and a write tool with an account token', async () => {
    const accounts = await modern.callTool({ name: 'list_accounts', arguments: {} });
    expect(accounts.isError).toBeFalsy();
    expect(JSON.stringify(accounts.structuredContent)).toContain('"ada"');

    const created = await modern.callTool({
      name: 'create_project',
      arguments: { account: 'ada', handle: 'site', name: 'Site', sourceLocale: 'en', targetLocales: ['fr'] },
    });
    expect(created.isError).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ account: 'ada', handle: 'site' });
    const rest = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'site' } });
    expect(rest.response.status).toBe(200);
  });

  it('gets invalid arguments back as a tool error with pointers to the arguments, and stores nothing', async () => {
    await modern.listTools();
    const refused = await modern.callTool({
      name: 'create_project',
      arguments: { account: 'ada', handle: 'Not A Handle', name: 'X', sourceLocale: 'en' },
    });
    expect(toolProblemOf(refused).errors!.map((issue) => issue.pointer)).toContain('/arguments/handle');

    const unknown = await modern.callTool({
      name: 'create_project',
      arguments: { account: 'ada', handle: 'x2', colour: 'blue' },
    });
    expect(toolProblemOf(unknown).errors).toContainEqual(
      expect.objectContaining({ pointer: '/arguments/colour' }),
    );
    // A tool that does not exist is the request's fault, not the tool's: a JSON-RPC error.
    const noTool = await modern.callTool({ name: 'no_such_tool', arguments: {} }).catch((e: unknown) => e);
    expect(noTool).toBeInstanceOf(ProtocolError);
    expect((noTool as ProtocolError).code).toBe(-32602);
    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data?.items.map((p) => p.handle)).toEqual(['site']);
  });
});

describe('2026-07-28 on the wire', () => {
  it('answers server/discover with the revisions it serves', async () => {
    const response = await postModern(service, { method: 'server/discover' }, auth());
    expect(response.status).toBe(200);
    const { result } = await jsonRpcOf(response);
    expect(result.supportedVersions).toContain(MODERN_REVISION);
    expect(result.capabilities.tools).toBeDefined();
    expect(result.instructions).toMatch(/list_accounts/);
    expect(response.headers.get('mcp-session-id')).toBeNull();
  });

  it('marks tools/list cacheable for this caller only (ttlMs, cacheScope private)', async () => {
    const response = await postModern(service, { method: 'tools/list' }, auth());
    // A modern answer is one JSON body, not a stream.
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    const { result } = await jsonRpcOf(response);
    expect(result.tools.length).toBeGreaterThan(0);
    expect(result.ttlMs).toBeGreaterThan(0);
    // The list is filtered by the token's scopes: no shared cache may hand it to another caller.
    expect(result.cacheScope).toBe('private');
  });

  it('refuses an Mcp-Method or Mcp-Name header that disagrees with the body (-32020)', async () => {
    const method = await postModern(
      service,
      { method: 'tools/list' },
      { ...auth(), 'Mcp-Method': 'tools/call' },
    );
    expect(method.status).toBe(400);
    expect((await jsonRpcOf(method)).error.code).toBe(-32020);

    const name = await postModern(
      service,
      { method: 'tools/call', params: { name: 'list_accounts', arguments: {} } },
      { ...auth(), 'Mcp-Name': 'create_project' },
    );
    expect(name.status).toBe(400);
    expect((await jsonRpcOf(name)).error.code).toBe(-32020);
  });

  it('refuses a revision it does not serve (-32022, naming the supported ones)', async () => {
    const response = await postModern(
      service,
      {
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      },
      { ...auth(), 'Mcp-Protocol-Version': '2099-01-01' },
    );
    expect(response.status).toBe(400);
    const { error } = await jsonRpcOf(response);
    expect(error.code).toBe(-32022);
    expect(error.data.supported).toContain(MODERN_REVISION);
  });

  /** A tools/list without a `_meta` envelope, under a revision header of its own. */
  const listUnderRevision = (revision: string, id: string | number, extra: Record<string, string> = {}) =>
    fetch(`${service.url}/mcp`, {
      method: 'POST',
      headers: {
        ...auth(),
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': revision,
        ...extra,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: {} }),
    });

  it('refuses any revision header it does not serve with -32022 and the request id, whatever the body', async () => {
    // The SDK compares revisions as text: `banana` sorted after 2026-07-28 and was told it lacked the
    // modern envelope; an unknown 2024 date got a -32000 without the request's id.
    for (const revision of ['banana', '2024-01-01', '2025-06-18, 2025-11-25', '2027-01-01']) {
      const response = await listUnderRevision(revision, 'r1');
      expect(response.status, revision).toBe(400);
      const { error, id } = await jsonRpcOf(response);
      expect(id, revision).toBe('r1');
      expect(error.code, revision).toBe(-32022);
      expect(error.data, revision).toEqual({
        requested: revision,
        supported: expect.arrayContaining([MODERN_REVISION, '2025-11-25', '2025-06-18', '2025-03-26']),
      });
    }
    // Optional whitespace around a served revision is no part of it, a revision repeated (a proxy that
    // doubles the header) is that revision, and an empty value is no header (read as 2025-03-26).
    for (const revision of ['2025-06-18 ', '2025-06-18, 2025-06-18', '', ' ']) {
      expect((await listUnderRevision(revision, 2)).status, JSON.stringify(revision)).toBe(200);
    }
    // A long value is named in part by the message, whole in data.requested.
    const long = `2099-${'x'.repeat(5000)}`;
    const refused = await jsonRpcOf(await listUnderRevision(long, 3));
    expect(refused.error.data.requested).toBe(long);
    expect(refused.error.message.length).toBeLessThan(300);
  });

  it('refuses a modern request without its _meta envelope (-32602)', async () => {
    const response = await listUnderRevision(MODERN_REVISION, 3, { 'Mcp-Method': 'tools/list' });
    expect(response.status).toBe(400);
    expect((await jsonRpcOf(response)).error.code).toBe(-32602);
  });

  it('answers tools/call without a name, or with arguments that are not an object, with -32602', async () => {
    for (const params of [{ arguments: {} }, { name: 'list_accounts', arguments: 'all of them' }]) {
      const response = await postModern(service, { method: 'tools/call', params }, auth());
      const { error } = await jsonRpcOf(response);
      expect(error.code, JSON.stringify(params)).toBe(-32602);
    }
  });
});

describe('2025-era clients on the legacy path of the same server', () => {
  for (const revision of ['2025-06-18', '2025-11-25']) {
    it(`serves the v1 SDK client at ${revision}`, async () => {
      const client = await mcpClient(service, ada.token, revision);
      try {
        expect((client.transport as { protocolVersion?: string }).protocolVersion).toBe(revision);
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name)).toContain('list_projects');
        const read = await client.callTool({ name: 'list_projects', arguments: { account: 'ada' } });
        expect(read.isError).toBeFalsy();
        expect(JSON.stringify(read.structuredContent)).toContain('"site"');
        const write = await client.callTool({
          name: 'update_project',
          arguments: { account: 'ada', project: 'site', name: `Site ${revision}` },
        });
        expect(write.isError).toBeFalsy();
        expect(write.structuredContent).toMatchObject({ name: `Site ${revision}` });
      } finally {
        await client.close();
      }
    });
  }
});
