import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postMcp } from '../mcp/helpers.ts';
import {
  authorize,
  CookieJar,
  randomAddress,
  registerPublicClient,
  registerSixTimes,
  startOAuthService,
  tokenRequest,
  uniqueHandle,
} from '../oauth/helpers.ts';
import { createTestUser } from '../support/fixtures.ts';
import { startTestService, type TestService } from '../support/service.ts';

const METRICS_TOKEN = randomBytes(32).toString('hex');

/** The value of the one sample of `name` whose labels include all of `labels`; undefined when none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

describe('/metrics on the main port behind METRICS_TOKEN', () => {
  let service: TestService;
  let text: string;

  beforeAll(async () => {
    service = await startOAuthService({ METRICS_TOKEN });
    // Traffic through every door.
    const user = await createTestUser(service, uniqueHandle('m'));
    const auth = { authorization: `Bearer ${user.token}` };
    expect((await fetch(`${service.url}/api/v1/accounts`, { headers: auth })).status).toBe(200);
    expect(
      (await fetch(`${service.url}/api/v1/accounts/nobody-here/projects`, { headers: auth })).status,
    ).toBe(404);
    const mcp = await postMcp(
      service,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_accounts', arguments: {} } },
      auth,
    );
    expect(mcp.status).toBe(200);
    expect(await mcp.text()).not.toContain('"isError":true');
    expect((await fetch(`${service.url}/`)).status).toBe(200);
    // OAuth: one token issued, one refused.
    const { client, redirectUri } = await registerPublicClient(service);
    const jar = new CookieJar();
    const { code, verifier } = await authorize(service, jar, client, redirectUri, {
      handle: uniqueHandle('o'),
      create: true,
    });
    const address = randomAddress();
    const issued = await tokenRequest(
      service,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: client.client_id,
        code_verifier: verifier,
      },
      { 'x-forwarded-for': address },
    );
    expect(issued.status).toBe(200);
    const refused = await tokenRequest(
      service,
      {
        grant_type: 'authorization_code',
        code: 'not-a-code',
        redirect_uri: redirectUri,
        client_id: client.client_id,
        code_verifier: verifier,
      },
      { 'x-forwarded-for': address },
    );
    expect(refused.status).toBe(400);
    // Registration is limited to 5 a minute per address: the sixth is turned away.
    expect(await registerSixTimes(randomAddress(), service)).toEqual([201, 201, 201, 201, 201, 429]);

    const scraped = await fetch(`${service.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
    text = await scraped.text();
  });
  afterAll(() => service?.close());

  it('refuses a scrape without the token or with a wrong one', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${METRICS_TOKEN.slice(1)}` },
      { authorization: 'Bearer x' },
    ];
    for (const headers of attempts) {
      const response = await fetch(`${service.url}/metrics`, { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await response.text()).not.toContain('http_request_duration_seconds');
    }
  });

  it('times requests by door, operation and status', () => {
    const rest = sample(text, 'http_request_duration_seconds_count', {
      door: 'rest',
      operation: 'listAccounts',
      status: '200',
    });
    expect(rest).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        door: 'rest',
        operation: 'listProjects',
        status: '404',
      }),
    ).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        door: 'mcp',
        operation: 'listAccounts',
        status: '200',
      }),
    ).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        door: 'oauth',
        operation: 'POST /oauth/token',
        status: '200',
      }),
    ).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', {
        door: 'oauth',
        operation: 'POST /oauth/token',
        status: '400',
      }),
    ).toBe(1);
    expect(
      sample(text, 'http_request_duration_seconds_count', { door: 'web', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    // A real duration: positive, and every observation fell in the +Inf bucket.
    const sum = sample(text, 'http_request_duration_seconds_sum', {
      door: 'rest',
      operation: 'listAccounts',
    })!;
    expect(sum).toBeGreaterThan(0);
    expect(
      sample(text, 'http_request_duration_seconds_bucket', {
        door: 'rest',
        operation: 'listAccounts',
        le: '+Inf',
      }),
    ).toBe(1);
  });

  it('counts tokens issued and refused by grant type', () => {
    expect(sample(text, 'oauth_tokens_total', { grant_type: 'authorization_code', outcome: 'issued' })).toBe(
      1,
    );
    expect(
      sample(text, 'oauth_tokens_total', {
        grant_type: 'authorization_code',
        outcome: 'refused',
        error: 'invalid_grant',
      }),
    ).toBe(1);
  });

  it('counts rate-limit rejections by limiter', () => {
    expect(sample(text, 'rate_limit_rejections_total', { limiter: 'register' })).toBe(1);
  });

  it('reports the database pool, the event loop and the process', () => {
    const open = sample(text, 'db_pool_connections')!;
    const max = sample(text, 'db_pool_connections_max')!;
    expect(max).toBe(10);
    expect(open).toBeGreaterThanOrEqual(1);
    expect(open).toBeLessThanOrEqual(max);
    expect(sample(text, 'db_pool_connections_idle')).toBeLessThanOrEqual(open);
    expect(sample(text, 'db_pool_waiting_requests')).toBe(0);
    expect(sample(text, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });
});

describe('/metrics on its own port (METRICS_PORT)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ METRICS_PORT: '0' });
  });
  afterAll(() => service?.close());

  it('is served there, and not on the main port', async () => {
    expect(service.metricsPort).toBeGreaterThan(0);
    expect((await fetch(`${service.url}/metrics`)).status).toBe(404);
    const response = await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/^# HELP http_request_duration_seconds /m);
    expect((await fetch(`http://127.0.0.1:${service.metricsPort}/api/v1/accounts`)).status).toBe(404);
  });
});

describe('a METRICS_PORT already in use', () => {
  it('fails the start naming METRICS_PORT, instead of a TypeError', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await once(busy, 'listening');
    const { port } = busy.address() as { port: number };
    try {
      await expect(startTestService({ METRICS_PORT: String(port) })).rejects.toThrow(
        new RegExp(`cannot listen on HOST 127\\.0\\.0\\.1 and METRICS_PORT ${port}: .*EADDRINUSE`),
      );
    } finally {
      busy.close();
    }
  });
});
