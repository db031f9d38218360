// JSON nested deeper than 64 levels is refused by the MCP door before the SDK reads it (a value thousands
// of levels deep overflowed the stack inside the SDK: HTTP 500, JSON-RPC -32603). Arguments too deep are
// invalid params carrying the 400 problem (refused before the message is read as a call, so not a tool
// error); the rest of the message too deep is an invalid request.

import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, nestedDeeperThan } from '../../src/lib/json-depth.ts';
import { useService, useUsers } from '../support/suite.ts';
import { issueToken, jsonRpcTextOf, postMcp, toolProblemOf } from './helpers.ts';

const service = useService();
const { ada } = useUsers(service, 'ada');

const arrays = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth)}"x"${'}'.repeat(depth)}`;

async function post(body: string) {
  const response = await postMcp(service, body, { authorization: `Bearer ${ada.token}` });
  const text = jsonRpcTextOf(await response.text(), response.headers.get('content-type'));
  return {
    status: response.status,
    message: JSON.parse(text) as {
      id: unknown;
      result?: unknown;
      error?: { code: number; data?: { status: number; errors: unknown[] } };
    },
  };
}

const call = (args: string, id = '7') =>
  `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"list_projects","arguments":${args}}}`;

describe('nestedDeeperThan', () => {
  it('counts arrays and objects, not scalars, up to the bound', () => {
    expect(nestedDeeperThan('x', 0)).toBe(false);
    expect(nestedDeeperThan([], 0)).toBe(true);
    expect(nestedDeeperThan(JSON.parse(arrays(MAX_JSON_DEPTH)))).toBe(false);
    expect(nestedDeeperThan(JSON.parse(arrays(MAX_JSON_DEPTH + 1)))).toBe(true);
    expect(nestedDeeperThan({ a: [1, { b: JSON.parse(objects(MAX_JSON_DEPTH - 2)) }] })).toBe(true);
    expect(nestedDeeperThan(JSON.parse(objects(100_000)))).toBe(true);
  });
});

describe('the MCP door', () => {
  it('answers a tools/call argument nested deeper than 64 levels with -32602 and the problem', async () => {
    for (const value of [arrays(65), objects(20_000)]) {
      const { status, message } = await post(call(`{"account":"ada","limit":${value}}`));
      expect(status).toBe(200);
      expect(message.id).toBe(7);
      expect(message.error?.code).toBe(-32602);
      expect(message.error?.data).toMatchObject({ status: 400 });
      expect(message.error?.data?.errors).toEqual([
        { pointer: '/arguments/limit', message: 'is nested deeper than 64 levels' },
      ]);
    }
    // `arguments` itself, when it is not an object.
    const { message } = await post(call(arrays(20_000)));
    expect(message.error?.data?.errors).toEqual([
      { pointer: '/arguments', message: 'is nested deeper than 64 levels' },
    ]);
  });

  it("answers arguments nested too deep for a tool outside the token's scopes with the 403 step-up", async () => {
    const readOnly = await issueToken(service, 'ada', ['project:read']);
    const body = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"delete_project","arguments":{"account":"ada","project":${arrays(70)}}}}`;
    const response = await postMcp(service, body, { authorization: `Bearer ${readOnly}` });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('scope="project:delete"');
    await response.body?.cancel();
  });

  it('lets 64 levels through to the schema, which refuses them for what they are (a tool error)', async () => {
    const { status, message } = await post(call(`{"account":"ada","limit":${arrays(64)}}`));
    expect(status).toBe(200);
    const { errors } = toolProblemOf(message.result as { isError?: unknown; content?: unknown });
    expect(errors).toEqual([expect.objectContaining({ pointer: '/arguments/limit' })]);
    expect(errors).not.toContainEqual(
      expect.objectContaining({ message: 'is nested deeper than 64 levels' }),
    );
  });

  it('answers the rest of a message nested too deep with -32600, never a 5xx', async () => {
    const bodies = [
      [`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":${objects(20_000)}}}`, 3],
      [`{"jsonrpc":"2.0","id":${arrays(20_000)},"method":"tools/list"}`, null],
      [`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":${arrays(20_000)}}`, 4],
      [`[${call('{}')},{"jsonrpc":"2.0","id":5,"method":"ping","params":${objects(65)}}]`, null],
    ] as const;
    for (const [body, id] of bodies) {
      const { status, message } = await post(body);
      expect(status, body.slice(0, 80)).toBe(400);
      expect(message).toMatchObject({ id, error: { code: -32600 } });
    }
    // A shallow message still works.
    const listed = await post('{"jsonrpc":"2.0","id":6,"method":"tools/list"}');
    expect(listed.status).toBe(200);
    expect(listed.message.result).toHaveProperty('tools');
  });
});
