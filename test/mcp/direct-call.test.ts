import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { useService, useUsers } from '../support/suite.ts';
import { jsonRpcTextOf, mcpClient, modernClient, postMcp, postModern } from './helpers.ts';

// A plain tools/call is answered without the SDK's per-request server (src/mcp/direct-call.ts). Two
// instances on one database, one with that path and one without it (MCP_DIRECT_TOOL_CALLS=false), get the
// same requests: every answer must be the same (status, the headers that describe the body, the JSON-RPC
// message). The metrics tell which path answered, so the test also knows that the direct one was taken.

const METRICS_TOKEN = randomBytes(32).toString('hex');
const direct = useService(() => startTestService({ METRICS_TOKEN }));
const { ada } = useUsers(direct, 'ada');
let viaSdk: TestService;

beforeAll(async () => {
  viaSdk = await startTestService(
    { METRICS_TOKEN, MCP_DIRECT_TOOL_CALLS: 'false' },
    { database: direct.database },
  );
  const created = await postModern(
    direct,
    {
      method: 'tools/call',
      params: {
        name: 'create_project',
        arguments: {
          account: 'ada',
          handle: 'site',
          name: 'Site',
          sourceLocale: 'en',
          targetLocales: ['fr'],
        },
      },
    },
    auth(),
  );
  expect(created.status).toBe(200);
});
afterAll(() => viaSdk?.stop());

const auth = () => ({ Authorization: `Bearer ${ada.token}` });

async function toolCalls(service: TestService): Promise<{ direct: number; sdk: number }> {
  const response = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const text = await response.text();
  const count = (path: string) =>
    Number(new RegExp(`^mcp_tool_calls_total\\{path="${path}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { direct: count('direct'), sdk: count('sdk') };
}

type Params = { name: string; arguments?: Record<string, unknown>; [key: string]: unknown };
type Send = (
  service: TestService,
  params: Params,
  headers: Record<string, string>,
  id?: unknown,
) => Promise<Response>;

const modern: Send = (service, params, headers, id = 7) =>
  postModern(service, { id: id as number, method: 'tools/call', params }, { ...auth(), ...headers });

/** A 2025-era stateless call, as a v1 client sends it after initialize: no envelope, the revision in a header. */
const legacy =
  (revision: string, message: Record<string, unknown> = {}): Send =>
  (service, params, headers, id = 'call-7') =>
    postMcp(
      service,
      { jsonrpc: '2.0', id, method: 'tools/call', params, ...message },
      { ...auth(), 'Mcp-Protocol-Version': revision, ...headers },
    );

/** What a client reads of an answer: status, the headers that describe the body, the JSON-RPC message. */
async function readAnswer(response: Response) {
  const type = response.headers.get('content-type');
  const text = await response.text();
  return {
    status: response.status,
    type,
    cacheControl: response.headers.get('cache-control'),
    message: JSON.parse(jsonRpcTextOf(text, type) || 'null'),
    // A stream is one `message` event: the same framing both ways.
    events: type?.includes('text/event-stream')
      ? text.split('\n').filter((line) => line.startsWith('event:'))
      : [],
  };
}

async function bothAnswers(send: Send, params: Params, headers: Record<string, string> = {}, id?: unknown) {
  return {
    direct: await readAnswer(await send(direct, params, headers, id)),
    sdk: await readAnswer(await send(viaSdk, params, headers, id)),
  };
}

const plainCalls: [string, Params][] = [
  ['a list', { name: 'list_projects', arguments: { account: 'ada' } }],
  ['a call without arguments', { name: 'list_accounts' }],
  ['a tool error (no such project)', { name: 'get_project', arguments: { account: 'ada', project: 'nope' } }],
  [
    'arguments the pipeline refuses (a tool error with pointers)',
    {
      name: 'create_project',
      arguments: { account: 'ada', handle: 'Not A Handle', name: 'X', sourceLocale: 'en' },
    },
  ],
  [
    'an argument the tool does not have',
    { name: 'list_projects', arguments: { account: 'ada', colour: 'blue' } },
  ],
  ['an unknown tool', { name: 'no_such_tool', arguments: {} }],
  ['an account the caller cannot see', { name: 'list_projects', arguments: { account: 'somebody-else' } }],
];

const eras: [string, Send][] = [
  ['2026-07-28', modern],
  ['2025-11-25', legacy('2025-11-25')],
  ['2025-06-18', legacy('2025-06-18')],
  ['2025-03-26', legacy('2025-03-26')],
];

describe.each(eras)('a plain tools/call at %s, answered directly and through the SDK', (era, send) => {
  it.each(plainCalls)('%s: the same answer both ways, the direct one without the SDK', async (_, params) => {
    const before = await toolCalls(direct);
    const beforeSdk = await toolCalls(viaSdk);
    const answers = await bothAnswers(send, params);
    expect(answers.direct).toEqual(answers.sdk);
    expect(answers.direct.message).toHaveProperty('id');
    // Taken directly on the first instance, through the SDK on the second.
    expect(await toolCalls(direct)).toEqual({ ...before, direct: before.direct + 1 });
    expect((await toolCalls(viaSdk)).sdk).toBe(beforeSdk.sdk + 1);
  });

  it('a write: the same result both ways, but for what makes each project its own', async () => {
    const call = (handle: string): Params => ({
      name: 'create_project',
      arguments: { account: 'ada', handle, name: 'Docs', sourceLocale: 'en', targetLocales: ['de'] },
    });
    const suffix = randomBytes(4).toString('hex');
    const fast = await readAnswer(await send(direct, call(`a-${suffix}`), {}));
    const sdk = await readAnswer(await send(viaSdk, call(`b-${suffix}`), {}));
    const own = (answer: typeof fast) => {
      const { structuredContent, content } = answer.message.result;
      const text = JSON.parse(content[0].text);
      for (const copy of [structuredContent, text].filter(Boolean))
        for (const key of ['id', 'handle', 'etag', 'createdAt', 'updatedAt']) delete copy[key];
      return {
        ...answer,
        message: { ...answer.message, result: { ...answer.message.result, content: [text] } },
      };
    };
    expect(JSON.parse(fast.message.result.content[0].text)).toMatchObject({
      name: 'Docs',
      handle: `a-${suffix}`,
    });
    // 2025-03-26 has no structuredContent: its clients get the result once, as text.
    if (era === '2025-03-26') expect(fast.message.result).not.toHaveProperty('structuredContent');
    else expect(fast.message.result.structuredContent).toMatchObject({ name: 'Docs', handle: `a-${suffix}` });
    expect(own(fast)).toEqual(own(sdk));
  });
});

describe('what is not plain goes through the SDK, with the SDK answer', () => {
  const list = { name: 'list_projects', arguments: { account: 'ada' } };
  const withProto = { name: 'list_projects', arguments: JSON.parse('{"account":"ada","__proto__":{"x":1}}') };
  const cases: [string, Send, Params, Record<string, string>, unknown?][] = [
    ['2026-07-28, an Mcp-Name that differs', modern, list, { 'Mcp-Name': 'list_accounts' }],
    ['2026-07-28, a progress token', modern, { ...list, _meta: { progressToken: 7 } }, {}],
    ['2026-07-28, a task', modern, { ...list, task: { ttl: 1000 } }, {}],
    [
      'a revision the SDK does not serve',
      modern,
      { ...list, _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      { 'Mcp-Protocol-Version': '2099-01-01' },
    ],
    ['2025, an Accept without event streams', legacy('2025-06-18'), list, { Accept: 'application/json' }],
    ['2025, a revision header the SDK does not serve', legacy('2024-01-01'), list, {}],
    ['2025, a progress token', legacy('2025-06-18'), { ...list, _meta: { progressToken: 7 } }, {}],
    // The classifier's verdict on an envelope is remembered (direct-call.ts): a refused one stays refused.
    ...[1, 2].map((n): [string, Send, Params, Record<string, string>] => [
      `2026-07-28, client info that is not an object (${n === 1 ? 'first' : 'second'} time)`,
      modern,
      { ...list, _meta: { 'io.modelcontextprotocol/clientInfo': 'raw-test' } },
      {},
    ]),
    ['2026-07-28, an id that is not an integer', modern, list, {}, 1.5],
    ['2026-07-28, an argument named __proto__ (zod drops it)', modern, withProto, {}],
    [
      '2026-07-28, arguments that are not an object',
      modern,
      { name: 'list_projects', arguments: ['ada'] } as never,
      {},
    ],
    ['2025, a name that is not a string', legacy('2025-06-18'), { name: 7 } as never, {}],
    ['2025, an argument named __proto__ (zod drops it)', legacy('2025-06-18'), withProto, {}],
    ['2025, an id that is not an integer', legacy('2025-06-18'), list, {}, 1.5],
    ['2025, an id beyond the safe integers', legacy('2025-06-18'), list, {}, 2 ** 60],
    ['2025, no id (a notification)', legacy('2025-06-18', { id: undefined }), list, {}],
    ['2025, another JSON-RPC version', legacy('2025-06-18', { jsonrpc: '1.0' }), list, {}],
    ['2025, a member JSON-RPC does not define', legacy('2025-06-18', { extra: true }), list, {}],
  ];

  it.each(cases)('%s', async (_, send, params, headers, id) => {
    const before = await toolCalls(direct);
    const answers = await bothAnswers(send, params, headers, id);
    expect(answers.direct).toEqual(answers.sdk);
    expect((await toolCalls(direct)).direct).toBe(before.direct);
  });
});

describe('the SDK clients take the direct path', () => {
  const clients: [string, () => ReturnType<typeof modernClient> | ReturnType<typeof mcpClient>][] = [
    ['the v2 client pinned to 2026-07-28', () => modernClient(direct, ada.token)],
    ['the v1 client at 2025-06-18', () => mcpClient(direct, ada.token, '2025-06-18')],
    ['the v1 client at 2025-11-25', () => mcpClient(direct, ada.token, '2025-11-25')],
  ];

  it.each(clients)('%s', async (_, connect) => {
    const client = await connect();
    try {
      const before = await toolCalls(direct);
      const result = await client.callTool({ name: 'list_projects', arguments: { account: 'ada' } });
      expect(JSON.stringify(result.structuredContent)).toContain('"site"');
      expect((await toolCalls(direct)).direct).toBe(before.direct + 1);
    } finally {
      await client.close();
    }
  });
});
