// A request whose body stalls past HTTP_REQUEST_TIMEOUT_MS is answered 408 by Node's timeout, which never
// reaches express: src/http-errors.ts answers it in the format of the door the request named (JSON-RPC on
// /mcp, the OAuth error on /oauth, a page for a browser), not in the REST API's for all of them.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { rawExchange } from '../support/raw-http.ts';
import { startTestService } from '../support/service.ts';
import { useService, useUsers } from '../support/suite.ts';

const lines: Record<string, unknown>[] = [];
const service = useService(() =>
  startTestService(
    { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '1500', DEV_LOGIN: 'true' },
    {
      logger: createLogger(
        { logLevel: 'info' },
        { write: (line: string) => void lines.push(JSON.parse(line)) },
      ),
    },
  ),
);
const { ada } = useUsers(service, 'ada');

/** Sends the head of a request whose body never comes, and returns the answer the service closes with. */
const stalled = (head: string) => rawExchange(service.port, `${head}\r\n{`);

describe('a request whose body stalls', () => {
  it("is answered 408 in the door's format", { timeout: 30_000 }, async () => {
    const json = 'Content-Type: application/json\r\nContent-Length: 100\r\n';
    const form = 'Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n';
    const [mcp, oauth, page] = await Promise.all([
      stalled(
        `POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ada.token}\r\nAccept: application/json, text/event-stream\r\n${json}`,
      ),
      stalled(`POST /oauth/token HTTP/1.1\r\nHost: x\r\n${form}`),
      stalled(`POST /signin/dev HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n${form}`),
    ]);
    for (const answer of [mcp, oauth, page]) expect(answer.status).toBe(408);
    expect(JSON.parse(mcp.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 }, id: null });
    expect(JSON.parse(oauth.body)).toEqual({
      error: 'invalid_request',
      error_description: 'The request was not sent in time.',
    });
    expect(page.headers).toContain('content-type: text/html');
    expect(page.body).toContain('The request was not sent in time.');

    // None of them was answered by the service: each is logged as aborted, with its ids, and no status of
    // ours (they were logged as "request completed" with 200), and counted as aborted.
    const requestLines = lines.filter((line) =>
      ['/mcp', '/oauth/token', '/signin/dev'].includes((line.req as { url?: string } | undefined)?.url ?? ''),
    );
    expect(requestLines).toHaveLength(3);
    for (const line of requestLines) {
      expect(line).toMatchObject({
        msg: 'request aborted',
        level: 40,
        requestId: expect.any(String),
        traceId: expect.any(String),
        res: { statusCode: null },
      });
    }
  });
});
