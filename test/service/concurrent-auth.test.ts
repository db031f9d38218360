// The failed-authentication limiter counts failures only: many valid requests in flight at once from one
// address (every user behind a proxy without TRUST_PROXY) all pass, and 401s still lock the address out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/oauth/rate-limits.ts';
import { postMcp } from '../mcp/helpers.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let ada: TestUser;

beforeAll(async () => {
  service = await startTestService();
  ada = await createTestUser(service, 'ada');
});
afterAll(() => service?.close());

const CONCURRENT = 100;

describe('failed-authentication limiter under concurrent valid traffic', () => {
  it(`answers ${CONCURRENT} concurrent valid REST requests from one address with 200`, async () => {
    const responses = await Promise.all(
      Array.from({ length: CONCURRENT }, () =>
        fetch(`${service.url}/api/v1/accounts/ada/projects`, {
          headers: { authorization: `Bearer ${ada.token}` },
        }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses).toEqual(Array(CONCURRENT).fill(200));
    for (const r of responses) expect((await r.json()).items).toEqual([]);
  });

  it(`answers ${CONCURRENT} concurrent valid MCP tool calls from one address with 200`, async () => {
    const responses = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, id) =>
        postMcp(
          service,
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } },
          { authorization: `Bearer ${ada.token}` },
        ),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(CONCURRENT).fill(200));
    for (const r of responses) {
      const body = await r.json();
      expect(body.result.isError).not.toBe(true);
      expect(body.result.structuredContent.items.map((a: { handle: string }) => a.handle)).toContain('ada');
    }
  });

  // Last: it locks 127.0.0.1 out for the rest of the minute.
  it('still answers 429 after enough real failures, on both doors, even to a valid token', async () => {
    for (let i = 0; i < LIMITS.failedAuth.perMinute; i++) {
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
    const mcp = await postMcp(
      service,
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { authorization: `Bearer ${ada.token}` },
    );
    expect(mcp.status).toBe(429);
  });
});
