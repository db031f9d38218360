import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../support/service.ts';
import { useService, useUsers } from '../support/suite.ts';
import { jsonRpcOf, modernClient, postModern } from './helpers.ts';

// A plain 2026-07-28 tools/call is answered without the SDK's per-request server (src/mcp/direct-call.ts).
// Two instances on one database, one with that path and one without it (MCP_DIRECT_TOOL_CALLS=false),
// get the same requests: every answer must be the same, byte for byte once parsed, with the same status and
// type. The metrics tell which path answered, so the test also knows that the direct one was taken.

const METRICS_TOKEN = randomBytes(32).toString('hex');
const direct = useService(() => startTestService({ METRICS_TOKEN }));
const { ada } = useUsers(direct, 'ada');
let viaSdk: TestService;

beforeAll(async () => {
  viaSdk = await startTestService(
    { METRICS_TOKEN, MCP_DIRECT_TOOL_CALLS: 'false' },
    { database: direct.database },
  );
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

type Message = Parameters<typeof postModern>[1];

/** The answer of both instances to the same request: status, type and parsed body. */
async function bothAnswers(message: Message, headers: Record<string, string> = {}) {
  const answer = async (service: TestService) => {
    const response = await postModern(service, message, { ...auth(), ...headers });
    return {
      status: response.status,
      type: response.headers.get('content-type'),
      body: JSON.parse(await response.text()),
    };
  };
  return { direct: await answer(direct), sdk: await answer(viaSdk) };
}

describe('a plain 2026-07-28 tools/call, answered directly and through the SDK', () => {
  beforeAll(async () => {
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

  const sameAnswers: [string, Message, Record<string, string>?][] = [
    ['a list', { method: 'tools/call', params: { name: 'list_projects', arguments: { account: 'ada' } } }],
    ['a call without arguments', { method: 'tools/call', params: { name: 'list_accounts' } }],
    [
      'a string id',
      {
        id: 'call-7' as unknown as number,
        method: 'tools/call',
        params: { name: 'list_accounts', arguments: {} },
      },
    ],
    [
      'a tool error (no such project)',
      {
        method: 'tools/call',
        params: { name: 'get_project', arguments: { account: 'ada', project: 'nope' } },
      },
    ],
    [
      'arguments the pipeline refuses (-32602 with pointers)',
      {
        method: 'tools/call',
        params: {
          name: 'create_project',
          arguments: { account: 'ada', handle: 'Not A Handle', name: 'X', sourceLocale: 'en' },
        },
      },
    ],
    [
      'an argument the tool does not have',
      {
        method: 'tools/call',
        params: { name: 'list_projects', arguments: { account: 'ada', colour: 'blue' } },
      },
    ],
    ['an unknown tool', { method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }],
    [
      'an account the caller cannot see',
      { method: 'tools/call', params: { name: 'list_projects', arguments: { account: 'somebody-else' } } },
    ],
  ];

  it.each(sameAnswers)(
    '%s: the same answer both ways, the direct one without the SDK',
    async (_, message) => {
      const before = await toolCalls(direct);
      const { direct: fast, sdk } = await bothAnswers(message);
      expect(fast).toEqual(sdk);
      expect(fast.type).toMatch(/^application\/json/);
      // Taken directly on the first instance, through the SDK on the second.
      expect((await toolCalls(direct)).direct).toBe(before.direct + 1);
      expect((await toolCalls(viaSdk)).sdk).toBeGreaterThan(0);
    },
  );

  it('a write: the same result both ways, but for what makes each project its own', async () => {
    const call = (handle: string): Message => ({
      method: 'tools/call',
      params: {
        name: 'create_project',
        arguments: { account: 'ada', handle, name: 'Docs', sourceLocale: 'en', targetLocales: ['de'] },
      },
    });
    const fast = await postModern(direct, call('docs-a'), auth());
    const sdk = await postModern(viaSdk, call('docs-b'), auth());
    expect(fast.status).toBe(sdk.status);
    const own = (body: Awaited<ReturnType<typeof jsonRpcOf>>) => {
      const project = body.result.structuredContent;
      const text = JSON.parse(body.result.content[0].text);
      for (const copy of [project, text])
        for (const key of ['id', 'handle', 'createdAt', 'updatedAt']) delete copy[key];
      return { ...body, result: { ...body.result, structuredContent: project, content: [text] } };
    };
    const fastBody = await jsonRpcOf(fast);
    expect(fastBody.result).toMatchObject({ resultType: 'complete', structuredContent: { name: 'Docs' } });
    expect(own(fastBody)).toEqual(own(await jsonRpcOf(sdk)));
  });

  it('leaves to the SDK what is not plain: a differing header, unknown _meta, another revision', async () => {
    const before = await toolCalls(direct);
    const list = { name: 'list_projects', arguments: { account: 'ada' } };
    const cases: [Message, Record<string, string>][] = [
      [{ method: 'tools/call', params: list }, { 'Mcp-Name': 'list_accounts' }],
      [{ method: 'tools/call', params: { ...list, _meta: { progressToken: 7 } } }, {}],
      [{ method: 'tools/call', params: { ...list, task: { ttl: 1000 } } }, {}],
      [
        {
          method: 'tools/call',
          params: { ...list, _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
        },
        { 'Mcp-Protocol-Version': '2099-01-01' },
      ],
    ];
    for (const [message, headers] of cases) {
      const { direct: fast, sdk } = await bothAnswers(message, headers);
      expect(fast).toEqual(sdk);
    }
    const after = await toolCalls(direct);
    expect(after.direct).toBe(before.direct);
  });

  it('serves the v2 SDK client pinned to 2026-07-28 on the direct path', async () => {
    const client = await modernClient(direct, ada.token);
    try {
      const before = await toolCalls(direct);
      const result = await client.callTool({ name: 'list_projects', arguments: { account: 'ada' } });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.structuredContent)).toContain('"site"');
      expect((await toolCalls(direct)).direct).toBe(before.direct + 1);
    } finally {
      await client.close();
    }
  });
});
