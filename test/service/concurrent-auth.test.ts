// The failed-authentication limiter counts failures only: many valid requests in flight at once from one
// address (every user behind a proxy without TRUST_PROXY) all pass, and 401s still lock the address out.

import { describe, expect, it } from 'vitest';
import { startRequest } from '../support/held-request.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada } = useUsers(service, 'ada');

const CONCURRENT = 100;

// biome-ignore lint/suspicious/noExplicitAny: JSON answers, checked field by field by the tests.
type Answer = { status: number; body: any };

/**
 * A POST on a connection of its own, sent but for the last byte of its body: the limiter (in front of
 * the body parser) has seen it, and it stays in flight until `finish()`. So a hundred of them are a
 * hundred valid requests in flight at once from one address, whatever the speed of the machine.
 */
function heldPost(path: string, body: unknown, token = ada.token): Promise<{ finish(): Promise<Answer> }> {
  const headers = {
    authorization: `Bearer ${token}`,
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  };
  return startRequest(Number(new URL(service.url).port), 'POST', path, headers, body, true);
}

/** Holds `count` requests in flight together, then lets them all finish. */
async function inFlightTogether(count: number, make: (i: number) => Promise<{ finish(): Promise<Answer> }>) {
  const held = [];
  for (let i = 0; i < count; i++) held.push(await make(i));
  // Connections are accepted in order: once a later one is answered, the service has seen all of the above.
  expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
  return Promise.all(held.map((h) => h.finish()));
}

describe('failed-authentication limiter under concurrent valid traffic', { timeout: 120_000 }, () => {
  it(`answers ${CONCURRENT} valid REST requests in flight at once from one address with success`, async () => {
    const answers = await inFlightTogether(CONCURRENT, (i) =>
      heldPost('/api/v1/accounts/ada/projects', { handle: `p-${i}`, name: `P ${i}`, sourceLocale: 'en' }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(CONCURRENT).fill(201));
    const list = await fetch(`${service.url}/api/v1/accounts/ada/projects?limit=100`, {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(((await list.json()) as { items: unknown[] }).items).toHaveLength(CONCURRENT);
  });

  it(`answers ${CONCURRENT} valid MCP tool calls in flight at once from one address with 200`, async () => {
    const answers = await inFlightTogether(CONCURRENT, (id) =>
      heldPost('/mcp', {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name: 'list_accounts', arguments: {} },
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(CONCURRENT).fill(200));
    for (const a of answers) {
      expect(a.body.result.isError).not.toBe(true);
      expect(a.body.result.structuredContent.items.map((x: { handle: string }) => x.handle)).toContain('ada');
    }
  });

  // Last: it locks 127.0.0.1 out for the rest of the minute.
  it('still answers 429 after enough real failures, on both doors, even to a valid token', async () => {
    for (let i = 0; i < service.config.rateLimits.failedAuthPerMinute; i++) {
      const failed = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
        headers: { authorization: 'Bearer l10n_not-a-token' },
      });
      expect(failed.status).toBe(401);
    }
    const rest = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(rest.status).toBe(429);
    expect(rest.headers.get('content-type')).toContain('application/problem+json');
    expect(Number(rest.headers.get('retry-after'))).toBeGreaterThan(0);
    const mcp = await (await heldPost('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' })).finish();
    expect(mcp.status).toBe(429);
  });
});
