import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { postMcp } from '../mcp/helpers.ts';
import { type Instance, spawnInstance } from '../support/cluster.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { sharedSecretsEnv, startTestService, type TestService } from '../support/service.ts';

const traceparent = () => {
  const traceId = randomBytes(16).toString('hex');
  return { traceId, header: `00-${traceId}-${randomBytes(8).toString('hex')}-01` };
};
type Line = Record<string, unknown> & { traceId?: string; msg?: string };

describe('W3C trace context without OpenTelemetry', () => {
  const lines: Line[] = [];
  let service: TestService;
  let ada: TestUser;
  beforeAll(async () => {
    const logger = createLogger(
      { logLevel: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    service = await startTestService({}, { logger });
    ada = await createTestUser(service, 'ada');
  });
  afterAll(() => service?.close());

  it("puts the caller's trace id on every log line of the request, at every door", async () => {
    const auth = { authorization: `Bearer ${ada.token}` };
    const doors: [string, () => Promise<Response>][] = [
      [
        'rest',
        async () =>
          fetch(`${service.url}/api/v1/accounts`, { headers: { ...auth, traceparent: rest.header } }),
      ],
      [
        'mcp',
        async () =>
          postMcp(
            service,
            { jsonrpc: '2.0', id: 1, method: 'tools/list' },
            { ...auth, traceparent: mcp.header },
          ),
      ],
      [
        'oauth',
        async () =>
          fetch(`${service.url}/.well-known/oauth-authorization-server`, {
            headers: { traceparent: oauth.header },
          }),
      ],
      ['web', async () => fetch(`${service.url}/`, { headers: { traceparent: web.header } })],
    ];
    const rest = traceparent();
    const mcp = traceparent();
    const oauth = traceparent();
    const web = traceparent();
    const ids = { rest, mcp, oauth, web };
    for (const [door, call] of doors) {
      const before = lines.length;
      const response = await call();
      expect(response.status, door).toBe(200);
      await response.arrayBuffer();
      // pino-http's line is written when the response finishes; give it that moment.
      await new Promise((resolve) => setImmediate(resolve));
      const during = lines.slice(before);
      expect(during.length, door).toBeGreaterThan(0);
      expect(
        during.map((l) => l.traceId),
        door,
      ).toEqual(during.map(() => ids[door as keyof typeof ids].traceId));
    }
  });

  it('gives a request without a (valid) traceparent a fresh trace id of its own', async () => {
    const ids: string[] = [];
    for (const header of [undefined, 'garbage', `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`]) {
      const before = lines.length;
      const response = await fetch(`${service.url}/`, { headers: header ? { traceparent: header } : {} });
      await response.arrayBuffer();
      await new Promise((resolve) => setImmediate(resolve));
      const traced = lines.slice(before).map((l) => l.traceId);
      expect(traced.length).toBeGreaterThan(0);
      expect(new Set(traced).size).toBe(1);
      expect(traced[0]).toMatch(/^[0-9a-f]{32}$/);
      expect(traced[0]).not.toBe('0'.repeat(32));
      ids.push(traced[0]!);
    }
    expect(new Set(ids).size).toBe(3);
  });
});

describe('OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  const received: { body: unknown; contentType: string | undefined }[] = [];
  let receiver: ReturnType<express.Express['listen']>;
  let database: TestDatabase;
  let instance: Instance;
  let user: TestUser;

  beforeAll(async () => {
    // A small OTLP/HTTP receiver: accepts what a collector would, keeps it for the test.
    const app = express();
    app.post('/v1/traces', express.json({ limit: '10mb' }), (req, res) => {
      received.push({ body: req.body, contentType: req.headers['content-type'] });
      res.json({});
    });
    receiver = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => receiver.once('listening', resolve));
    database = await createTestDatabase();
    const port = await freePort();
    instance = await spawnInstance('traced', port, {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: database.url,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...sharedSecretsEnv,
    });
    user = await createTestUser({ url: instance.url, database } as unknown as TestService, 'otel');
  }, 60_000);
  afterAll(async () => {
    await instance?.kill();
    receiver?.close();
    await database?.drop();
  });

  it('exports the spans of a traced request (HTTP, express, pg) under the caller trace id, which the logs carry', async () => {
    const { traceId, header } = traceparent();
    const response = await fetch(`${instance.url}/api/v1/accounts`, {
      headers: { authorization: `Bearer ${user.token}`, traceparent: header },
    });
    expect(response.status).toBe(200);

    type Span = { traceId: string; name: string; kind: number };
    const spansOf = () =>
      received.flatMap(({ body }) =>
        (
          (body as { resourceSpans?: { scopeSpans: { scope: { name: string }; spans: Span[] }[] }[] })
            .resourceSpans ?? []
        ).flatMap((r) =>
          r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ ...span, scope: s.scope.name }))),
        ),
      );
    // The batch processor exports every 100 ms here, and the HTTP server span ends (and is exported) after
    // the response, so possibly in a later batch than the pg spans: wait (bounded) for every kind of span.
    const exported = (scope: string) =>
      spansOf().some((s) => s.traceId === traceId && s.scope.includes(scope));
    await expect
      .poll(() => ['http', 'express', 'pg'].every(exported), { timeout: 10_000, interval: 100 })
      .toBe(true);
    const ours = spansOf().filter((s) => s.traceId === traceId);
    const scopes = new Set(ours.map((s) => s.scope));
    expect([...scopes].sort()).toEqual(
      expect.arrayContaining([
        '@opentelemetry/instrumentation-http',
        '@opentelemetry/instrumentation-express',
        '@opentelemetry/instrumentation-pg',
      ]),
    );
    expect(ours.some((s) => s.scope === '@opentelemetry/instrumentation-http' && s.kind === 2)).toBe(true); // SERVER
    expect(received[0]!.contentType).toMatch(/application\/json/);

    // The process's log lines for that request carry the same trace id.
    const logged = instance.output
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line)
      .filter((line) => line.traceId === traceId);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.some((line) => line.msg === 'request completed')).toBe(true);
  }, 30_000);
});
