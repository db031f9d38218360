import { Client as ModernClient, ProtocolError } from '@modelcontextprotocol/client';
import { ListToolsResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTransport } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { ParamsCheckingServer } from '../../src/mcp/invalid-params.ts';
import { useService, useUsers } from '../support/suite.ts';
import { jsonRpcOf, mcpClient, modernClient, postMcp, postModern } from './helpers.ts';

// Params that do not fit an MCP method the SDK dispatches (initialize, tools/list, tools/call's own
// fields) are the client's mistake: -32602 with a message naming the param, at the HTTP status the SDK
// gives any invalid params a method answers (200: the error is the answer), never -32603 with zod's
// issues as JSON (src/mcp/invalid-params.ts).

const service = useService();
const { ada } = useUsers(service, 'ada');
const auth = () => ({ Authorization: `Bearer ${ada.token}` });

/** A readable message: one line of words, none of the JSON of zod's issue list. */
function expectReadable(message: string) {
  expect(message).not.toMatch(/[[\]{}\n]/);
  expect(message).not.toMatch(/invalid_type|"code"|"path"/);
}

const legacyCases: [string, string, Record<string, unknown>, RegExp[]][] = [
  [
    'initialize without any of its params',
    'initialize',
    {},
    [/params\.protocolVersion: .*expected string/, /params\.capabilities: /, /params\.clientInfo: /],
  ],
  [
    'initialize with a protocolVersion that is a number',
    'initialize',
    { protocolVersion: 5, capabilities: {}, clientInfo: { name: 'test', version: '1.0.0' } },
    [/params\.protocolVersion: .*expected string, received number/],
  ],
  [
    'tools/list with a cursor that is a number',
    'tools/list',
    { cursor: 5 },
    [/params\.cursor: .*expected string/],
  ],
  ['tools/call with a name that is a number', 'tools/call', { name: 5 }, [/params\.name: .*expected string/]],
];

describe.each(['2025-06-18', '2025-11-25', '2025-03-26'])('at %s (the stateless legacy path)', (revision) => {
  it.each(legacyCases)('%s: -32602 naming the param, HTTP 200', async (_, method, params, named) => {
    const response = await postMcp(
      service,
      { jsonrpc: '2.0', id: 9, method, params },
      { ...auth(), 'Mcp-Protocol-Version': revision },
    );
    expect(response.status).toBe(200);
    const { id, error } = await jsonRpcOf(response);
    expect(id).toBe(9);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(new RegExp(`^Invalid params for ${method}: `));
    for (const pattern of named) expect(error.message).toMatch(pattern);
    expectReadable(error.message);
  });
});

describe('at 2026-07-28', () => {
  it('answers tools/list with a cursor that is a number with -32602 naming it, HTTP 200 JSON', async () => {
    const response = await postModern(
      service,
      { id: 4, method: 'tools/list', params: { cursor: 5 } },
      auth(),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const { id, error } = await jsonRpcOf(response);
    expect(id).toBe(4);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/^Invalid params for tools\/list: params\.cursor: .*expected string/);
    expectReadable(error.message);
  });

  it('answers tools/call with a name that is a number with -32602 naming it', async () => {
    const response = await postModern(service, { method: 'tools/call', params: { name: 5 } }, auth());
    expect(response.status).toBe(200);
    const { error } = await jsonRpcOf(response);
    expect(error.code).toBe(-32602);
    expect(error.message).toMatch(/^Invalid params for tools\/call: params\.name: /);
    expectReadable(error.message);
  });

  it('has no initialize: -32601 (HTTP 404) whatever its params, which are never read', async () => {
    for (const params of [{}, { protocolVersion: 5 }]) {
      const response = await postModern(service, { method: 'initialize', params }, auth());
      expect(response.status).toBe(404);
      expect((await jsonRpcOf(response)).error.code).toBe(-32601);
    }
  });

  it('refuses a cursor that is a string too, for its value: the tools come on one page, with no cursor', async () => {
    const response = await postModern(service, { method: 'tools/list', params: { cursor: 'abc' } }, auth());
    const { result, error } = await jsonRpcOf(response);
    expect(result).toBeUndefined();
    expect(error).toMatchObject({ code: -32602, message: expect.stringMatching(/^Invalid cursor: /) });
  });
});

describe('through the SDK clients', () => {
  it('the v2 client at 2026-07-28 gets a ProtocolError -32602 naming the cursor', async () => {
    const client = await modernClient(service, ada.token);
    try {
      const error = await client.listTools({ cursor: 5 as unknown as string }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProtocolError);
      expect((error as ProtocolError).code).toBe(-32602);
      expect((error as ProtocolError).message).toMatch(/params\.cursor: .*expected string/);
    } finally {
      await client.close();
    }
  });

  it('the v1 client at 2025-06-18 gets an McpError -32602 naming the cursor', async () => {
    const client = await mcpClient(service, ada.token, '2025-06-18');
    try {
      const error = await client
        .request({ method: 'tools/list', params: { cursor: 5 as unknown as string } }, ListToolsResultSchema)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32602);
      expect((error as McpError).message).toMatch(/params\.cursor: .*expected string/);
    } finally {
      await client.close();
    }
  });
});

// A failure of a handler of ours is not the client's mistake. Our handlers do not fail on demand behind
// a started service, so this one runs the same server class with a handler that does, over the SDK's
// in-memory transport, with the real v2 client.
describe('an error of our own handler', () => {
  it('stays -32603 when the params fit, and bad params are still -32602', async () => {
    const server = new ParamsCheckingServer(
      { name: 'failing', version: '1.0.0' },
      { capabilities: { tools: { listChanged: false } } },
    );
    server.setRequestHandler('tools/list', () => {
      throw new Error('the tool catalogue is unavailable');
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new ModernClient({ name: 'test', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      const ours = await client.listTools().catch((e: unknown) => e);
      expect(ours).toBeInstanceOf(ProtocolError);
      expect((ours as ProtocolError).code).toBe(-32603);
      expect((ours as ProtocolError).message).toMatch(/the tool catalogue is unavailable/);

      const theirs = await client.listTools({ cursor: 5 as unknown as string }).catch((e: unknown) => e);
      expect((theirs as ProtocolError).code).toBe(-32602);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
