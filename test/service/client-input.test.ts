// HTTP-level client mistakes, on every door: a path that is not valid percent-encoding, an unsupported
// charset or Content-Encoding, a broken gzip body, malformed JSON and a body over the limit. Each gets a
// 4xx in the door's own format (problem+json on /api, a JSON-RPC error on /mcp, an RFC 6749 error body on
// /oauth/*), never express's HTML page with a stack trace, and none of them is logged as an error.

import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_BODY_BYTES } from '../../src/api/limits.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { rawExchange } from '../support/raw-http.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let ada: TestUser;
const logLines: Array<{ level: number; msg: string; err?: unknown }> = [];

beforeAll(async () => {
  const logger = createLogger(
    { logLevel: 'debug' },
    {
      write(line: string) {
        logLines.push(JSON.parse(line));
      },
    },
  );
  // Each request speaks from its own address, so the registration limit (5 a minute) does not interfere.
  service = await startTestService({ TRUST_PROXY: 'true' }, { logger });
  ada = await createTestUser(service, 'ada');
});
afterAll(() => service?.close());

type Door = 'api' | 'mcp' | 'register' | 'token';

let addresses = 0;
const ownAddress = () => ({ 'x-forwarded-for': `198.51.100.${++addresses}` });

/** A request each door accepts, but for what the case changes. */
function doorRequest(door: Door): { path: string; headers: Record<string, string>; body: string } {
  const request = requestFor(door);
  return { ...request, headers: { ...request.headers, ...ownAddress() } };
}

function requestFor(door: Door): { path: string; headers: Record<string, string>; body: string } {
  switch (door) {
    case 'api':
      return {
        path: '/api/v1/accounts/ada/projects',
        headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ handle: 'gzipped', name: 'Gzipped', sourceLocale: 'en' }),
      };
    case 'mcp':
      return {
        path: '/mcp',
        headers: {
          authorization: `Bearer ${ada.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      };
    case 'register':
      return {
        path: '/oauth/register',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'c', redirect_uris: ['http://127.0.0.1:9/cb'] }),
      };
    case 'token':
      return {
        path: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=authorization_code&code=x&client_id=nobody&code_verifier=y&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb',
      };
  }
}

/** Checks the body is the door's error format and returns the message it carries. */
async function errorOf(door: Door, res: Response): Promise<string> {
  const text = await res.text();
  expect(text).not.toMatch(/<html|\n\s+at /i);
  const body = JSON.parse(text);
  if (door === 'api') {
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(body.status).toBe(res.status);
    expect(body.type).toMatch(/^https:\/\//);
    return body.detail;
  }
  expect(res.headers.get('content-type')).toContain('application/json');
  if (door === 'mcp') {
    expect(body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: expect.any(Number) } });
    return body.error.message;
  }
  expect(body).toEqual({ error: expect.any(String), error_description: expect.any(String) });
  return body.error_description;
}

const doors: Door[] = ['api', 'mcp', 'register', 'token'];

describe('bodies the service cannot read, on every door', () => {
  it.each(doors)('%s: a body over the limit is 413', async (door) => {
    const { path, headers } = doorRequest(door);
    const big =
      door === 'token'
        ? `grant_type=refresh_token&refresh_token=${'a'.repeat(MAX_REQUEST_BODY_BYTES + 1024)}`
        : JSON.stringify({ filler: 'a'.repeat(MAX_REQUEST_BODY_BYTES + 1024) });
    const res = await fetch(`${service.url}${path}`, { method: 'POST', headers, body: big });
    expect(res.status).toBe(413);
    expect(await errorOf(door, res)).toMatch(/larger than (8 MB|56 kB)/);
  });

  it.each(doors)('%s: an unsupported Content-Encoding is 415', async (door) => {
    const { path, headers, body } = doorRequest(door);
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-encoding': 'compress' },
      body,
    });
    expect(res.status).toBe(415);
    expect(await errorOf(door, res)).toContain('Content-Encoding "compress" is not supported');
  });

  it.each(doors)('%s: a broken gzip body is 400', async (door) => {
    const { path, headers } = doorRequest(door);
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-encoding': 'gzip' },
      body: 'this is not gzip',
    });
    expect(res.status).toBe(400);
    expect(await errorOf(door, res)).toContain('could not be decoded');
  });

  it.each(doors)('%s: a truncated gzip body is 400', async (door) => {
    const { path, headers, body } = doorRequest(door);
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-encoding': 'gzip' },
      body: gzipSync(body).subarray(0, 12),
    });
    expect(res.status).toBe(400);
    await errorOf(door, res);
  });

  it.each(['api', 'mcp', 'register'] as Door[])('%s: an unsupported charset is 415', async (door) => {
    const { path, headers, body } = doorRequest(door);
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json; charset=klingon' },
      body,
    });
    expect(res.status).toBe(415);
    expect(await errorOf(door, res)).toContain('charset "KLINGON" is not supported');
  });

  it.each(['api', 'mcp', 'register'] as Door[])('%s: malformed JSON is 400', async (door) => {
    const { path, headers } = doorRequest(door);
    const res = await fetch(`${service.url}${path}`, { method: 'POST', headers, body: '{"handle":' });
    expect(res.status).toBe(400);
    await errorOf(door, res);
  });

  it('a gzip body that is fine is read (the encoding itself is supported)', async () => {
    const { path, headers, body } = doorRequest('api');
    const res = await fetch(`${service.url}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-encoding': 'gzip' },
      body: gzipSync(body),
    });
    expect(res.status).toBe(201);
  });
});

describe('paths that are not valid percent-encoding', () => {
  it('/api: 400 problem+json naming the path', async () => {
    const res = await fetch(`${service.url}/api/v1/accounts/%ZZ/projects`, {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(res.status).toBe(400);
    expect(await errorOf('api', res)).toContain('percent-encoding');
  });

  it.each([
    ['/mcp/%ZZ', 'application/json'],
    ['/oauth/%ZZ', 'application/json'],
    ['/oauth/register/%ZZ', 'application/json'],
    ['/settings/%ZZ', 'application/json'],
    ['/%E0%A4%A', 'application/json'],
  ])('%s (%s): a 4xx in JSON, no stack trace', async (path, accept) => {
    const res = await fetch(`${service.url}${path}`, { headers: { accept } });
    const text = await res.text();
    // 401: the registration management endpoint asks for its access token first.
    expect([400, 401, 404]).toContain(res.status);
    expect(text).not.toMatch(/<html|\n\s+at /i);
    expect(() => JSON.parse(text)).not.toThrow();
  });

  it.each(['/settings/%ZZ', '/oauth/authorize/%ZZ'])(
    '%s: a browser gets a page, not a stack trace',
    async (path) => {
      const res = await fetch(`${service.url}${path}`, { headers: { accept: 'text/html' } });
      expect([400, 404]).toContain(res.status);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(await res.text()).not.toMatch(/\n\s+at |URIError/);
    },
  );
});

describe('requests Node cannot parse', () => {
  const raw = (request: string) => rawExchange(service.port, request);
  const huge = `x-filler: ${'a'.repeat(20_000)}\r\n`;

  it.each([
    ['/api/v1/accounts', 'application/problem+json', (body: string) => JSON.parse(body).status],
    ['/mcp', 'application/json', (body: string) => JSON.parse(body).error.code],
    ['/oauth/token', 'application/json', (body: string) => JSON.parse(body).error],
  ])("%s: headers over the limit are a 431 in the door's format", async (path, type, read) => {
    const answer = await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\n${huge}\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.headers).toContain(`content-type: ${type}`);
    expect(read(answer.body)).toBe(
      { '/api/v1/accounts': 431, '/mcp': -32600, '/oauth/token': 'invalid_request' }[path],
    );
  });

  it('a page asked for by a browser: a 431 page', async () => {
    const answer = await raw(`GET /dashboard HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n${huge}\r\n`);
    expect(answer.status).toBe(431);
    expect(answer.headers).toContain('content-type: text/html');
    expect(answer.body).toContain('larger than the 16 kB');
  });

  it.each([
    ['/api/v1/accounts', 'application/problem+json', (body: string) => JSON.parse(body).status],
    ['/mcp', 'application/json', (body: string) => JSON.parse(body).error.code],
    ['/oauth/token', 'application/json', (body: string) => JSON.parse(body).error],
  ])("%s: an Expect other than 100-continue is a 417 in the door's format", async (path, type, read) => {
    const answer = await raw(`POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 0\r\n\r\n`);
    expect(answer.status).toBe(417);
    expect(answer.headers).toContain(`content-type: ${type}`);
    expect(read(answer.body)).toBe(
      { '/api/v1/accounts': 417, '/mcp': -32600, '/oauth/token': 'invalid_request' }[path],
    );
  });

  it('CONNECT is a 405 with Allow, not a dropped connection', async () => {
    for (const target of ['/api/v1/user', '127.0.0.1:443']) {
      const answer = await raw(`CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(answer.status, target).toBe(405);
      expect(answer.headers).toContain('allow: get, head, post');
      expect(JSON.parse(answer.body)).toMatchObject({ status: 405 });
    }
  });

  it('a malformed header is a 400 problem on /api', async () => {
    const answer = await raw('GET /api/v1/accounts HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, detail: 'The request is not valid HTTP.' });
  });
});

describe('logging of client mistakes', () => {
  it('logs none of the above at error level, and no stack trace', () => {
    expect(logLines.length).toBeGreaterThan(0);
    const errors = logLines.filter((line) => line.level >= 50);
    expect(errors).toEqual([]);
    expect(logLines.filter((line) => JSON.stringify(line).includes('\\n    at '))).toEqual([]);
  });
});
