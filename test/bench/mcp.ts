// MCP against REST on the same operation: tools/call list_projects at the 2026-07-28 revision (a stateless
// POST /mcp with its `_meta` envelope, a server per request, a JSON answer) next to GET /api/v1/accounts/{account}/projects, one after the other, same data.
import { type BenchEnv, compare } from './harness.ts';

export async function benchMcp(env: BenchEnv) {
  const call = {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'list_projects',
      arguments: { account: env.handle },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {},
      },
    },
  };
  const mcpHeaders = {
    authorization: `Bearer ${env.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': 'list_projects',
  };
  await assertSameList(env, call, mcpHeaders);

  const [rest, mcp] = await compare(
    'MCP vs REST, same operation',
    [
      'REST GET /api/v1/accounts/{account}/projects',
      {
        url: `${env.service.url}/api/v1/accounts/${env.handle}/projects`,
        headers: { authorization: `Bearer ${env.token}` },
      },
    ],
    [
      'MCP tools/call list_projects',
      { url: `${env.service.url}/mcp`, method: 'POST', headers: mcpHeaders, body: JSON.stringify(call) },
    ],
    { label: 'MCP throughput / REST', aim: 0.7 },
  );
  return { rest, mcp };
}

/** A benchmark of an error path measures nothing: both doors must answer the same page first. */
async function assertSameList(env: BenchEnv, call: unknown, headers: Record<string, string>) {
  const rest = await fetch(`${env.service.url}/api/v1/accounts/${env.handle}/projects`, {
    headers: { authorization: headers.authorization! },
  });
  const mcp = await fetch(`${env.service.url}/mcp`, { method: 'POST', headers, body: JSON.stringify(call) });
  const restBody = await rest.json();
  const mcpBody = await mcp.json();
  const same = JSON.stringify(mcpBody?.result?.structuredContent) === JSON.stringify(restBody);
  if (rest.status !== 200 || mcp.status !== 200 || mcpBody.result?.isError || !same) {
    throw new Error(`MCP and REST disagree before the benchmark: ${JSON.stringify({ restBody, mcpBody })}`);
  }
}
