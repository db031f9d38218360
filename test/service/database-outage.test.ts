// PostgreSQL going away under a running service (a restart, a failover): while it is down every door
// answers 503 with Retry-After in its own format (never 500), the service recovers by itself when the
// database is back, and no write it acknowledged is lost. The PostgreSQL here is the test's own (a second
// embedded instance), so the test can stop and start it.

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OpenApiDocument } from '../../src/api/catalogue.ts';
import { loadCatalogue, type OperationSpec } from '../../src/api/catalogue.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { Project } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { inlineSchema } from '../../src/mcp/json-schema.ts';
import { createKit, type PageContext, type WebDeps } from '../../src/web/kit.ts';
import { jsonRpcTextOf, postMcp, postModern } from '../mcp/helpers.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { startTestService, type TestService } from '../support/service.ts';

const METRICS_TOKEN = 'outage-metrics-token-0123456789abcdef';
let dir: string;
let pgPort: number;
let postgres: EmbeddedDatabase;
let service: TestService;
let ada: TestUser;

const catalogue = await loadCatalogue();
const problemValidator = new AjvJsonSchemaValidator().getValidator(
  inlineSchema(catalogue.resolved.components.schemas.Problem, 'Problem'),
);
/** The request body openapi.yaml gives as its example, if the operation takes one. */
function requestExample(op: OperationSpec): unknown {
  const content = (op.raw.requestBody as OpenApiDocument | undefined)?.content?.['application/json'];
  return content?.example ?? Object.values<{ value?: unknown }>(content?.examples ?? {})[0]?.value;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'l10n-outage-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as its own user, which must enter the folder
  pgPort = await freePort();
  postgres = await startEmbeddedPostgres(dir, pgPort);
  service = await startTestService(
    { METRICS_TOKEN: METRICS_TOKEN },
    { database: { url: postgres.url, drop: async () => {} } },
  );
  ada = await createTestUser(service, 'ada');
});
afterAll(async () => {
  await service?.close();
  await postgres?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const auth = () => ({ authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' });

interface Attempt {
  handle: string;
  status: number | 'network error';
}

/** Creates projects one after another until told to stop, recording every answer. */
function writeLoop(name: string) {
  const attempts: Attempt[] = [];
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const handle = `${name}-${i}`;
      const status = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
        method: 'POST',
        headers: auth(),
        body: JSON.stringify({ handle, name: handle, sourceLocale: 'en' }),
      }).then(
        (res) => res.status,
        () => 'network error' as const,
      );
      attempts.push({ handle, status });
    }
  })();
  return {
    attempts,
    async stop() {
      running = false;
      await done;
      return attempts;
    },
  };
}

/** An MCP answer during the outage: HTTP 503, Retry-After, and a JSON-RPC error with the request's id. */
async function expectUnavailable(res: Response, id: number | null, where: string) {
  const text = jsonRpcTextOf(await res.text(), res.headers.get('content-type'));
  expect(res.status, `${where}: ${text}`).toBe(503);
  expect(Number(res.headers.get('retry-after')), where).toBeGreaterThan(0);
  expect(JSON.parse(text), where).toMatchObject({
    jsonrpc: '2.0',
    error: { code: -32000, data: { status: 503 } },
    id,
  });
}

async function until(condition: () => Promise<boolean>, what: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('a database outage under load', { timeout: 120_000 }, () => {
  it('answers 503 with Retry-After while PostgreSQL is down, recovers, and loses no acknowledged write', async () => {
    // An OAuth client registered before the outage, for the token endpoint's answer during it.
    const registered = await fetch(`${service.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'outage',
        redirect_uris: ['http://127.0.0.1:9/cb'],
        token_endpoint_auth_method: 'none',
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id: clientId } = (await registered.json()) as { client_id: string };

    // More writers than the service's pool has connections (10): at the moment PostgreSQL stops, the whole
    // pool is inside transactions, and each of those connections must come back to the pool afterwards.
    const writers = Array.from({ length: 12 }, (_, i) => writeLoop(`w${i}`));
    await until(async () => writers.every((w) => w.attempts.some((a) => a.status === 201)), 'writes before');

    // One MCP tool call on an account puts ada's token in the verified-caller cache (the writers keep it
    // there), so the calls below reach the pipeline without a statement of their own: a warm cache.
    const list = { name: 'list_projects', arguments: { account: 'ada' } };
    const bearer = { authorization: `Bearer ${ada.token}` };
    const warm = await postMcp(
      service,
      { jsonrpc: '2.0', id: 4, method: 'tools/call', params: list },
      bearer,
    );
    expect(warm.status).toBe(200);
    await warm.text();

    await postgres.stop();

    // REST: problem+json 503 with Retry-After, for reads and writes.
    const read = await fetch(`${service.url}/api/v1/accounts/ada/projects`, { headers: auth() });
    expect(read.status).toBe(503);
    expect(read.headers.get('content-type')).toContain('application/problem+json');
    expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await read.json()).toMatchObject({
      status: 503,
      type: expect.stringContaining('service-unavailable'),
    });

    // Every operation of openapi.yaml answers it the same way, and lists that answer (with its Retry-After).
    for (const op of catalogue.operations.values()) {
      const where = op.operationId;
      // Plausible path values (ids where ids go) and the example body: only the outage can refuse it.
      const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
        /id$|^token$|^invitation$|^identity$/i.test(name) ? crypto.randomUUID() : 'ada',
      );
      const body = requestExample(op);
      const res = await fetch(`${service.url}${path}`, {
        method: op.method.toUpperCase(),
        headers: { ...auth(), 'if-match': '"v1"' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect(res.status, where).toBe(503);
      expect(Number(res.headers.get('retry-after')), where).toBeGreaterThan(0);
      expect(problemValidator(await res.json()).errorMessage, where).toBeUndefined();
      const listed = (op.raw.responses as Record<string, unknown>)['503'] as OpenApiDocument | undefined;
      expect(listed?.headers, `${where} lists 503 with Retry-After`).toHaveProperty('Retry-After');
    }

    // MCP: the same, as a JSON-RPC error with the request's id. A tool that needs the cached caller
    // confirmed first (the confirmation fails), and a token not in the cache (finding it fails).
    const accounts = { name: 'list_accounts', arguments: {} };
    await expectUnavailable(
      await postMcp(service, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: accounts }, bearer),
      1,
      'confirming a cached caller',
    );
    const uncached = { authorization: `Bearer l10n_${'x'.repeat(40)}` };
    await expectUnavailable(
      await postMcp(service, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: accounts }, uncached),
      2,
      'finding an uncached caller',
    );
    await expectUnavailable(
      await postMcp(service, '{"jsonrpc":"2.0","id":3,', uncached),
      null,
      'finding an uncached caller, the body unreadable',
    );
    // A call the pipeline answers with the 503 problem (the cached caller is confirmed by the operation's
    // own statement): an HTTP 503 too, not a tool result, on the direct path and through the SDK, at each
    // revision. `_meta` the direct path does not take sends a call through the SDK.
    const call = (id: number, params: Record<string, unknown>) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params,
    });
    for (const revision of ['2025-03-26', '2025-06-18', '2025-11-25']) {
      const headers = { ...bearer, 'Mcp-Protocol-Version': revision };
      await expectUnavailable(await postMcp(service, call(5, list), headers), 5, `${revision} direct`);
      await expectUnavailable(
        await postMcp(service, call(6, { ...list, _meta: {} }), headers),
        6,
        `${revision} SDK`,
      );
    }
    await expectUnavailable(
      await postModern(service, { id: 7, method: 'tools/call', params: list }, bearer),
      7,
      '2026-07-28 direct',
    );
    await expectUnavailable(
      await postModern(
        service,
        { id: 8, method: 'tools/call', params: { ...list, _meta: { 'example.com/sdk': true } } },
        bearer,
      ),
      8,
      '2026-07-28 SDK',
    );

    // Each of those 503s is in the latency histogram under its operation, as an answered call would be
    // (the answers of an unknown caller were labelled by the route, "POST /mcp/mcp").
    const scraped = await (
      await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    expect(scraped).toMatch(
      /http_request_duration_seconds_count\{door="mcp",operation="listAccounts",status="503"\} [1-9]/,
    );
    expect(scraped).not.toContain('/mcp/mcp');

    // OAuth: the token endpoint's own error format.
    const token = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'x'.repeat(43),
        client_id: clientId,
      }),
    });
    expect(token.status).toBe(503);
    expect(Number(token.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });

    // The authorization endpoint, a person's page: it says the service is busy, not that the app erred.
    const authorize = await fetch(
      `${service.url}/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: 'http://127.0.0.1:9/cb',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        scope: 'project:read',
      })}`,
      { redirect: 'manual' },
    );
    expect(authorize.status).toBe(503);
    const busy = await authorize.text();
    expect(busy).toContain('The service is busy');
    expect(busy).not.toContain('maker');

    // Readiness says so too.
    expect((await fetch(`${service.url}/readyz`)).status).toBe(503);

    // The writers keep going through the outage; then the database comes back, same data, same port.
    const during = writers.map((w) => w.attempts.length);
    await until(
      async () => writers.every((w, i) => w.attempts.length > (during[i] ?? 0) + 2),
      'writes during',
    );
    postgres = await startEmbeddedPostgres(dir, pgPort);

    // Recovery without restarting the service.
    await until(
      async () =>
        (await fetch(`${service.url}/api/v1/accounts/ada/projects`, { headers: auth() })).status === 200,
      'recovery',
    );
    const after = writers.map((w) => w.attempts.filter((a) => a.status === 201).length);
    await until(
      async () =>
        writers.every((w, i) => w.attempts.filter((a) => a.status === 201).length > (after[i] ?? 0)),
      'writes after',
    );
    const attempts = (await Promise.all(writers.map((w) => w.stop()))).flat();

    // Only "created" and "unavailable": never a 500, never a dropped connection.
    const statuses = new Set(attempts.map((a) => a.status));
    expect([...statuses].sort()).toEqual([201, 503]);

    // Every acknowledged write is in the database.
    const acknowledged = attempts.filter((a) => a.status === 201).map((a) => a.handle);
    const orm = await openDatabase(postgres.url);
    try {
      const stored = new Set((await orm.em.fork().find(Project, {})).map((p) => p.handle));
      expect(acknowledged.filter((handle) => !stored.has(handle))).toEqual([]);
      expect(acknowledged.length).toBeGreaterThan(6);
    } finally {
      await orm.close();
    }

    // No connection was left checked out by the transactions the outage cut off: closing the pool, which
    // waits for every connection to come back, finishes (it would hang for ever on a leaked one).
    await service.stop();
  });
});

// A page whose session check succeeded before the database went away, and whose operation then answered
// 503: the page says so with the problem's Retry-After, as the REST door does. (Sessions are read from
// PostgreSQL on every request, so the outage above cannot time this; the kit is called directly.)
describe('a page whose operation meets the outage', () => {
  it('sends the problem headers with the problem page', async () => {
    const kit = createKit({} as WebDeps);
    const pc = { userHandle: 'ada', csrf: 'c', signoutCsrf: 's' } as PageContext;
    const app = express();
    app.get('/page', (_req, res) =>
      kit.problemPage(res, pc, {
        status: 503,
        body: { type: 'service-unavailable', title: 'Service unavailable', status: 503, detail: 'Retry.' },
        headers: { 'Retry-After': '2' },
      }),
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/page`);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(await res.text()).toContain('Service unavailable');
    } finally {
      server.close();
    }
  });
});
