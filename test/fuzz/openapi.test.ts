// Property-based run of every operation in openapi.yaml, over REST and over MCP, with requests generated
// from the document itself (path and query parameters, If-Match, bodies from their JSON schemas), valid and
// junk alike, aimed at real resources by a caller holding every scope so they get past authentication.
// Whatever is sent: no 5xx, no JSON-RPC internal error, no error logged, and every answer is one the
// document promises (a listed status; the response schema; problem+json for errors, or a tool error
// carrying the problem). CI runs a fixed seed and a small budget; FUZZ_RUNS and FUZZ_SEED run more locally.
//
// The generated requests are well-formed HTTP: values in a URL are cut to keep it under Node's header limit
// (431 before the service sees it), and bodies stay under the body limit. What is wrong with the wire itself
// (charset, Content-Encoding, a body over the limit, bad percent-encoding) is the last part of this file.

import { randomUUID } from 'node:crypto';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import type { OpenApiDocument } from '../../src/api/catalogue.ts';
import { loadCatalogue, type OperationSpec } from '../../src/api/catalogue.ts';
import { MAX_REQUEST_BODY_BYTES } from '../../src/api/limits.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { inlineSchema, type JsonSchema } from '../../src/mcp/json-schema.ts';
import { deriveTools, type ToolDefinition } from '../../src/mcp/tools.ts';
import { type OidcUpstream, startOidcUpstream } from '../identity/upstream.ts';
import { jsonRpcTextOf, postMcp } from '../mcp/helpers.ts';
import { startTxtServer, type TxtServer } from '../support/dns-server.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService, type TestService } from '../support/service.ts';
import {
  expectedStatus,
  fromSchema,
  locationsIn,
  type Mode,
  mutationOf,
  oddCursor,
  oddText,
  oddValue,
  replaceAt,
  toJsonText,
  type WireDefect,
  wireBody,
  wireDefect,
} from './arbitraries.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 8);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const MAX_URL_VALUE = 2000;
const MAX_BODY_BYTES = MAX_REQUEST_BODY_BYTES;

const catalogue = await loadCatalogue();
const tools = new Map(deriveTools(catalogue).map((tool) => [tool.spec.operationId, tool]));

// Reads first, deletes last, and the two that take the organization away from the caller at the very end,
// so that most runs find the resources they aim at.
const METHOD_ORDER = { get: 0, post: 1, put: 2, patch: 3, delete: 4 };
const FINAL = ['leaveOrganization', 'deleteOrganization'];
const rank = (op: OperationSpec) => METHOD_ORDER[op.method] + 10 * (FINAL.indexOf(op.operationId) + 1);
const operations = [...catalogue.operations.values()].sort((a, b) => rank(a) - rank(b));

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}

interface GeneratedRequest {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  headers: Record<string, unknown>;
  body: unknown;
  hasBody: boolean;
}

function parametersOf(op: OperationSpec): Parameter[] {
  return ((op.raw.parameters as OpenApiDocument[]) ?? []).map((parameter) => ({
    ...(parameter as Parameter),
    schema: inlineSchema(parameter.schema ?? {}, op.operationId),
  }));
}

function requestBodyOf(
  op: OperationSpec,
): { schema: JsonSchema; required: boolean; example: unknown } | undefined {
  const body = op.raw.requestBody as OpenApiDocument | undefined;
  const content = body?.content?.['application/json'];
  if (!body || !content?.schema) return undefined;
  const examples = Object.values<{ value?: unknown }>(content.examples ?? {});
  return {
    schema: inlineSchema(content.schema, op.operationId),
    required: body.required === true,
    example: content.example ?? examples[0]?.value,
  };
}

/** Path parameter values naming resources that exist (filled in beforeAll). */
const real: Record<string, string[]> = {};
/** Placeholder for "the resource's current ETag", looked up just before the request is sent. */
const CURRENT_ETAG = '<current>';

function requestArbitrary(op: OperationSpec, mode: Mode): fc.Arbitrary<GeneratedRequest> {
  const parameters = parametersOf(op);
  const parts = (place: Parameter['in']) =>
    Object.fromEntries(
      parameters
        .filter((p) => p.in === place)
        .map((p) => {
          let value: fc.Arbitrary<unknown>;
          if (place === 'path') {
            const existing = fc.constantFrom(...real[p.name]!);
            value =
              mode === 'valid'
                ? existing
                : fc.oneof(
                    { weight: 3, arbitrary: existing },
                    { weight: 1, arbitrary: fromSchema(p.schema, 'valid') },
                    { weight: 2, arbitrary: fc.oneof(oddText, fromSchema(p.schema, 'fuzz')) },
                  );
          } else if (place === 'header') {
            const plausible = fc.constantFrom(CURRENT_ETAG, '"v1"', '"r0"', '*');
            value = mode === 'valid' ? plausible : fc.oneof(plausible, oddText);
          } else {
            const odd = p.name === 'cursor' ? oddCursor : oddText;
            value =
              mode === 'valid' ? fromSchema(p.schema, 'valid') : fc.oneof(fromSchema(p.schema, 'fuzz'), odd);
          }
          return [p.name, p.required ? value : fc.option(value, { nil: undefined })];
        }),
    );
  const body = requestBodyOf(op);
  // The document's own example is a valid body that gets past the rules a schema cannot state (a known
  // locale, a country code): the best base for "valid but for one thing".
  const fromBodySchema = (m: Mode) =>
    body?.example !== undefined && m === 'valid'
      ? fc.oneof(fc.constant(body.example), fromSchema(body.schema, m))
      : fromSchema(body!.schema, m);
  const bodyArbitrary: fc.Arbitrary<unknown> = body
    ? body.required || mode === 'valid'
      ? fromBodySchema(mode)
      : fc.option(fromBodySchema(mode), { nil: undefined })
    : fc.constant(undefined);
  return fc
    .record({
      params: fc.record(parts('path')),
      query: fc.record(parts('query')),
      headers: fc.record(parts('header')),
      body: bodyArbitrary,
    })
    .map((request) => ({ ...request, hasBody: request.body !== undefined }));
}

/** A valid request with exactly one node (a parameter, a header, a body field or key) broken. */
function oneDefectArbitrary(op: OperationSpec): fc.Arbitrary<GeneratedRequest> {
  const hasBodySchema = requestBodyOf(op) !== undefined;
  const declared = parametersOf(op)
    .filter((p) => p.in !== 'path')
    .map((p) => [p.in === 'query' ? 'query' : 'headers', p.name] as [string, string]);
  return requestArbitrary(op, 'valid').chain((request) => {
    const { hasBody, ...parts } = request;
    const spots = [
      ...locationsIn(parts).filter((spot) => spot.length > 1 || (spot[0] === 'body' && hasBodySchema)),
      ...declared.filter(
        ([part, name]) => (parts as Record<string, Record<string, unknown>>)[part]![name] === undefined,
      ),
    ];
    if (spots.length === 0) return fc.constant(request);
    return fc.constantFrom(...spots).chain((spot) => {
      const current = spot.reduce<unknown>(
        (node, key) => (node as Record<string | number, unknown>)?.[key],
        parts,
      );
      return mutationOf(current, spot.at(-1)).map((odd) => ({
        ...(replaceAt(parts, spot, odd) as Omit<GeneratedRequest, 'hasBody'>),
        hasBody: hasBody || spot[0] === 'body',
      }));
    });
  });
}

function operationArbitrary(op: OperationSpec) {
  return fc
    .oneof(
      { weight: 1, arbitrary: requestArbitrary(op, 'valid') },
      { weight: 4, arbitrary: oneDefectArbitrary(op) },
      { weight: 1, arbitrary: requestArbitrary(op, 'fuzz') },
    )
    .filter(({ params }) =>
      // An empty segment, '.' or '..' changes the path itself: the request is no longer this operation's.
      Object.values(params).every((value) => typeof value !== 'string' || !['', '.', '..'].includes(value)),
    );
}

let service: TestService;
let ada: TestUser;
const errorLogs: string[] = [];
// The organization's e-mail domain answers its verification challenge from this DNS server (TXT records by
// name), and its identity provider is a real oidc-provider, so that verifyDomain and the provider's
// operations reach their success paths too.
let dns: TxtServer;
let idp: OidcUpstream;
const DOMAIN = 'guild.example';
/** Ada's second sign-in method (the first one cannot be unlinked), put back after unlinkIdentity's runs. */
const secondIdentity = randomUUID();

beforeAll(async () => {
  const logger = createLogger({ logLevel: 'error' }, { write: (line: string) => void errorLogs.push(line) });
  dns = await startTxtServer();
  idp = await startOidcUpstream(['http://127.0.0.1/signin/callback/org']);
  service = await startTestService({ DNS_SERVERS: dns.address }, { logger });
  ada = await createTestUser(service, 'ada');
  const bob = await createTestUser(service, 'bob');
  await createTestOrganization(service, 'guild', ada, { members: [bob] });
  const client = ada.client;
  const [token, invitation] = await Promise.all([
    sdk.createToken({ client, path: { account: 'ada' }, body: { name: 'ci', scopes: ['project:read'] } }),
    sdk.createInvitation({ client, path: { org: 'guild' }, body: { email: 'grace@example.com' } }),
  ]);
  // Something to read (and an ETag to match) on voice and glossary.
  const [voice, glossary] = await Promise.all([
    sdk.saveVoice({ client, path: { account: 'ada' }, body: { tone: 'Friendly', changeNote: 'first' } }),
    sdk.saveGlossary({ client, path: { account: 'ada' }, body: { entries: [{ term: 'Acme' }] } }),
  ]);
  expect([voice.response.status, glossary.response.status]).toEqual([201, 201]);
  Object.assign(real, {
    account: ['ada', 'guild'],
    org: ['guild'],
    project: ['site'],
    modelHandle: ['main'],
    token: [(token.data as { id: string }).id],
    user: ['bob'],
    invitation: [(invitation.data as { id: string }).id],
    clientId: ['some-client'],
    domain: [DOMAIN],
    identity: [secondIdentity, (await sdk.listIdentities({ client })).data!.items[0]!.id],
  });
}, 120_000);
afterAll(async () => {
  await service?.close();
  await idp?.close();
  await dns?.close();
});

// Create (and after a delete operation's runs, put back) the project and model every account has, the
// organization's domain (its TXT record published) and identity provider, and Ada's second identity, so
// that each operation meets real resources.
let deletedSomething = true;
beforeEach(async () => {
  errorLogs.length = 0;
  if (!deletedSomething) return;
  deletedSomething = false;
  const client = ada.client;
  const [domain] = await Promise.all([
    // Claiming the domain again issues a new record, which the DNS server then answers with.
    sdk.addDomain({ client, path: { org: 'guild' }, body: { domain: DOMAIN } }),
    sdk.setIdentityProvider({
      client,
      path: { org: 'guild' },
      body: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        enrollRole: 'member',
      },
    }),
    restoreSecondIdentity(),
    ...['ada', 'guild'].flatMap((account) => [
      sdk.createProject({
        client,
        path: { account },
        body: { handle: 'site', name: 'Site', sourceLocale: 'en' },
      }),
      sdk.createModel({ client, path: { account }, body: { handle: 'main', model: 'openai:gpt-4o' } }),
    ]),
  ]);
  const record = (domain.data as { txtRecord?: { name: string; value: string } } | undefined)?.txtRecord;
  if (record) dns.records.set(record.name, record.value);
});

async function restoreSecondIdentity() {
  const db = new pg.Client({ connectionString: service.database.url });
  await db.connect();
  try {
    await db.query(
      `insert into identities (id, user_id, provider, subject, email, email_verified)
       values ($1, $2, 'google', $3, 'ada@example.com', true) on conflict do nothing`,
      [secondIdentity, ada.userId, `fuzz-${ada.userId}`],
    );
  } finally {
    await db.end();
  }
}

// --- checking answers against openapi.yaml ---

const ajv = new AjvJsonSchemaValidator();
const problemValidator = ajv.getValidator(
  inlineSchema(catalogue.resolved.components.schemas.Problem, 'Problem'),
);
const responseValidators = new Map<string, ReturnType<AjvJsonSchemaValidator['getValidator']>>();

function responseValidator(op: OperationSpec, status: number) {
  const key = `${op.operationId} ${status}`;
  if (!responseValidators.has(key)) {
    const response = (op.raw.responses as Record<string, unknown>)[String(status)] as
      | OpenApiDocument
      | undefined;
    const schema = response?.content?.['application/json']?.schema;
    if (!schema) throw new Error(`${key} documents no JSON body`);
    responseValidators.set(key, ajv.getValidator(inlineSchema(schema, key)));
  }
  return responseValidators.get(key)!;
}

function documentedStatuses(op: OperationSpec): string[] {
  return Object.keys(op.raw.responses as Record<string, unknown>);
}

function describeRequest(request: GeneratedRequest): string {
  const text = toJsonText(request);
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

function expectProblem(op: OperationSpec, status: number, problem: unknown, where: string) {
  expect(status, where).toBeLessThan(500);
  expect(documentedStatuses(op), `${where}: status ${status} is not in openapi.yaml`).toContain(
    String(status),
  );
  const check = problemValidator(problem);
  expect(check.errorMessage, where).toBeUndefined();
  expect((problem as { status: number }).status, where).toBe(status);
}

// --- the two doors ---

async function currentEtag(op: OperationSpec, path: string): Promise<string> {
  const read = [...catalogue.operations.values()].find((o) => o.path === op.path && o.method === 'get');
  if (!read) return '"v1"';
  const response = await fetch(`${service.url}${path}`, {
    headers: { authorization: `Bearer ${ada.token}` },
  });
  await response.body?.cancel();
  return response.headers.get('etag') ?? '"v1"';
}

/** Text as it can travel in a URL or header: well-formed (a lone surrogate has no UTF-8 form) and short. */
function urlText(value: unknown): string {
  const text = typeof value === 'string' ? value : toJsonText(value);
  return text.toWellFormed().slice(0, MAX_URL_VALUE);
}

function urlPath(op: OperationSpec, request: GeneratedRequest): string {
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(urlText(request.params[name])),
  );
}

async function sendRest(op: OperationSpec, request: GeneratedRequest) {
  const path = urlPath(op, request);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(request.query)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value.slice(0, 5) : [value]) query.append(name, urlText(item));
  }
  const headers: Record<string, string> = { authorization: `Bearer ${ada.token}` };
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    // Header values are visible ASCII on the wire (fetch refuses the rest before sending).
    headers[name.toLowerCase()] =
      value === CURRENT_ETAG
        ? await currentEtag(op, path)
        : urlText(value)
            .replace(/[^\x21-\x7e]/g, '?')
            .slice(0, 200) || '?';
  }
  let body: string | undefined;
  if (request.hasBody) {
    body = toJsonText(request.body);
    headers['content-type'] = 'application/json';
  }
  const response = await fetch(`${service.url}${path}${query.size > 0 ? `?${query}` : ''}`, {
    method: op.method.toUpperCase(),
    headers,
    body,
  });
  const text = await response.text();
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text };
}

function checkRest(
  op: OperationSpec,
  request: GeneratedRequest,
  answer: Awaited<ReturnType<typeof sendRest>>,
) {
  const where = `REST ${op.operationId} ${describeRequest(request)} -> ${answer.status} ${answer.text.slice(0, 300)}`;
  if (answer.status >= 400) {
    expect(answer.contentType, where).toMatch(/^application\/problem\+json/);
    expectProblem(op, answer.status, JSON.parse(answer.text), where);
    return;
  }
  expect(documentedStatuses(op), `${where}: status is not in openapi.yaml`).toContain(String(answer.status));
  if (answer.status === 204 || answer.status === 304) {
    expect(answer.text, where).toBe('');
    return;
  }
  expect(answer.contentType, where).toMatch(/^application\/json/);
  expect(responseValidator(op, answer.status)(JSON.parse(answer.text)).errorMessage, where).toBeUndefined();
}

/** The operation request as a tool call's flat arguments, following the tool's own placement. */
function toolArguments(tool: ToolDefinition, request: GeneratedRequest): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [argument, place] of tool.placement) {
    const value =
      place.in === 'path'
        ? request.params[place.name]
        : place.in === 'query'
          ? request.query[place.name]
          : place.in === 'header'
            ? request.headers[place.name]
            : tool.wholeBody
              ? request.body
              : undefined;
    if (value !== undefined) args[argument] = value;
  }
  // A flattened body brings all its fields, unknown ones included (those must be refused by name).
  if (!tool.wholeBody && request.body && typeof request.body === 'object' && !Array.isArray(request.body)) {
    Object.assign(args, request.body);
  }
  return args;
}

async function sendMcp(tool: ToolDefinition, request: GeneratedRequest) {
  const args = toolArguments(tool, request);
  if (args.if_match === CURRENT_ETAG)
    args.if_match = await currentEtag(tool.spec, urlPath(tool.spec, request));
  const response = await postMcp(
    service,
    toJsonText({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: tool.tool.name, arguments: args },
    }),
    { authorization: `Bearer ${ada.token}` },
  );
  return {
    status: response.status,
    text: jsonRpcTextOf(await response.text(), response.headers.get('content-type')),
    args,
  };
}

function checkMcp(
  tool: ToolDefinition,
  request: GeneratedRequest,
  answer: Awaited<ReturnType<typeof sendMcp>>,
) {
  const op = tool.spec;
  const where = `MCP ${tool.tool.name} ${describeRequest(request)} -> ${answer.status} ${answer.text.slice(0, 300)}`;
  expect(answer.status, where).toBe(200);
  const message = JSON.parse(answer.text) as {
    result?: { isError?: boolean; content?: { text: string }[]; structuredContent?: Record<string, unknown> };
    error?: { code: number; message: string; data?: { status: number } };
  };
  // Arguments the tool refuses are a tool error carrying the same problem (400, pointers) the REST door
  // answers, as is anything else the operation refuses; only what cannot be read as a call at all (an
  // argument nested too deep) is invalid params (-32602) carrying that problem. Never -32603.
  if (message.error) {
    expect(message.error.code, where).toBe(-32602);
    expectProblem(op, 400, message.error.data, where);
    return;
  }
  const result = message.result!;
  if (result.isError) {
    const problem = JSON.parse(result.content![0]!.text) as { status: number };
    expectProblem(op, problem.status, problem, where);
    return;
  }
  if (result.structuredContent === undefined) return;
  // A conditional read that names the current version (a 304 over REST) is a result of its own.
  if (result.structuredContent.notModified === true && documentedStatuses(op).includes('304')) {
    expect(result.structuredContent, where).toEqual({ notModified: true, etag: expect.any(String) });
    return;
  }
  const success = documentedStatuses(op).find((status) => status.startsWith('2') && status !== '204')!;
  const body = tool.wrapsResult ? result.structuredContent.result : result.structuredContent;
  expect(responseValidator(op, Number(success))(body).errorMessage, where).toBeUndefined();
}

// What the runs got back, by case and status: a check that the generators reach the handlers (not only
// validation), printed with FUZZ_REPORT=1 to see where a seed went.
const answers = new Map<string, Map<number, number>>();
function tally(label: string, status: number) {
  const byStatus = answers.get(label) ?? new Map<number, number>();
  byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  answers.set(label, byStatus);
}
/** The HTTP status a tool result stands for: the problem's, or 200. */
function mcpStatus(text: string): number {
  try {
    const message = JSON.parse(text) as {
      result?: { isError?: boolean; content?: { text: string }[] };
      error?: { code: number };
    };
    if (message.error?.code === -32602) return 400;
    const result = message.result;
    return result?.isError ? (JSON.parse(result.content![0]!.text) as { status: number }).status : 200;
  } catch {
    return 0;
  }
}

const cases = operations.flatMap((op) => [
  [`${op.operationId} over REST`, op, undefined] as const,
  ...(tools.has(op.operationId)
    ? [[`${op.operationId} over MCP`, op, tools.get(op.operationId)!] as const]
    : []),
]);

describe(`every operation of openapi.yaml, generated requests (seed ${SEED}, ${RUNS} runs each)`, () => {
  it('covers every operation over REST and every tool over MCP', () => {
    expect(cases.filter(([, , tool]) => !tool)).toHaveLength(catalogue.operations.size);
    expect(cases.filter(([, , tool]) => tool)).toHaveLength(tools.size);
    expect(tools.size).toBeGreaterThan(20);
    for (const op of operations) {
      for (const p of parametersOf(op).filter((p) => p.in === 'path'))
        expect(real, `a real value for ${op.operationId} {${p.name}}`).toHaveProperty(p.name);
    }
  });

  it.each(cases.map((c, index) => [...c, SEED + index] as const))(
    '%s: no 5xx, every answer as openapi.yaml documents it',
    async (_label, op, tool, seed) => {
      deletedSomething = op.method === 'delete';
      await fc.assert(
        fc.asyncProperty(operationArbitrary(op), async (request) => {
          const size = request.hasBody ? Buffer.byteLength(toJsonText(request.body)) : 0;
          fc.pre(size < MAX_BODY_BYTES);
          if (tool) {
            const answer = await sendMcp(tool, request);
            tally(_label, answer.status === 200 ? mcpStatus(answer.text) : answer.status);
            checkMcp(tool, request, answer);
          } else {
            const answer = await sendRest(op, request);
            tally(_label, answer.status);
            checkRest(op, request, answer);
          }
        }),
        { numRuns: RUNS, seed },
      );
      expect(errorLogs, 'errors logged by the service').toEqual([]);
    },
    300_000,
  );

  it('got past validation to the handlers, and was refused by validation, on most operations', () => {
    if (process.env.FUZZ_REPORT) {
      for (const [label, byStatus] of answers)
        console.log(label.padEnd(40), JSON.stringify(Object.fromEntries([...byStatus].sort())));
    }
    const reached = [...answers.values()].filter((byStatus) =>
      [...byStatus.keys()].some((s) => s < 300 || s >= 401),
    );
    const refused = [...answers.values()].filter((byStatus) => byStatus.has(400));
    expect(reached.length).toBeGreaterThan(cases.length * 0.7);
    expect(refused.length).toBeGreaterThan(cases.length * 0.7);
  });
});

describe('MCP envelopes', () => {
  it('answers odd tools/call envelopes with a JSON-RPC or tool error, never an internal error', async () => {
    const names = [...tools.values()].map((tool) => tool.tool.name);
    const params = fc.record({
      name: fc.oneof(fc.constantFrom(...names), oddValue),
      arguments: fc.oneof(oddValue, fc.dictionary(oddText, oddValue, { maxKeys: 3 })),
      _meta: fc.option(oddValue, { nil: undefined }),
    });
    const id = fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), oddValue);
    await fc.assert(
      fc.asyncProperty(params, id, async (call, callId) => {
        const response = await postMcp(
          service,
          toJsonText({ jsonrpc: '2.0', id: callId, method: 'tools/call', params: call }),
          { authorization: `Bearer ${ada.token}` },
        );
        const text = jsonRpcTextOf(await response.text(), response.headers.get('content-type'));
        const where = `${toJsonText(call).slice(0, 300)} -> ${response.status} ${text.slice(0, 300)}`;
        expect(response.status, where).toBeLessThan(500);
        const message = JSON.parse(text) as { error?: { code: number } };
        expect(message.error?.code, where).not.toBe(-32603);
      }),
      { numRuns: RUNS * 5, seed: SEED },
    );
    expect(errorLogs, 'errors logged by the service').toEqual([]);
  }, 300_000);
});

// --- HTTP-level defects: the request is refused before its JSON is read ---
//
// Each operation, over REST and (for tools) over MCP, sent otherwise valid requests with one defect of the
// wire: a charset other than UTF-8, a Content-Encoding not read, a body that is not what its gzip, deflate
// or br encoding says, a body just over the limit (plain, or gzipped and too large once inflated), a path
// segment that is not valid percent-encoding. REST answers the defect's status as a problem openapi.yaml
// lists for the operation; MCP answers it in HTTP with a JSON-RPC error; never a 5xx.

const WIRE_RUNS = Number(process.env.FUZZ_WIRE_RUNS ?? 4);
const wireKinds = new Set<WireDefect['kind']>();

/** The operation's request with real path values and the document's example body: valid but for the defect. */
function baseRequest(op: OperationSpec): GeneratedRequest {
  const params = Object.fromEntries(
    parametersOf(op)
      .filter((p) => p.in === 'path')
      .map((p) => [p.name, real[p.name]![0]]),
  );
  const body = requestBodyOf(op)?.example;
  return { params, query: {}, headers: {}, body, hasBody: body !== undefined };
}

function pathWith(op: OperationSpec, request: GeneratedRequest, defect: WireDefect, at: number): string {
  let index = 0;
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = encodeURIComponent(urlText(request.params[name]));
    return defect.kind === 'percent' && index++ === at ? `${value}${defect.escape}` : value;
  });
}

async function sendWire(
  url: string,
  method: string,
  headers: Record<string, string>,
  text: string | undefined,
  defect: WireDefect,
) {
  wireKinds.add(defect.kind);
  const wire = text === undefined ? undefined : wireBody(text, defect);
  const response = await fetch(url, {
    method,
    headers: { ...headers, ...wire?.headers },
    body: wire ? new Uint8Array(wire.body) : undefined,
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text: await response.text(),
  };
}

const wireCases = operations.flatMap((op) => {
  const where = { body: requestBodyOf(op) !== undefined, path: op.path.includes('{') };
  return [
    [`${op.operationId} over REST`, op, undefined, where] as const,
    // Every tool call is a JSON body, whether or not the operation has one.
    ...(tools.has(op.operationId)
      ? [[`${op.operationId} over MCP`, op, tools.get(op.operationId)!, { body: true, path: false }] as const]
      : []),
  ];
});

describe(`every operation, HTTP-level defects (seed ${SEED}, ${WIRE_RUNS} runs each)`, () => {
  it.each(
    wireCases
      .filter(([, , , where]) => where.body || where.path)
      .map((c, index) => [...c, SEED + 1000 + index] as const),
  )(
    '%s: refused with a documented 400, 413 or 415 in its own format',
    async (_label, op, tool, where, seed) => {
      const pathCount = (op.path.match(/\{/g) ?? []).length;
      const defects = wireDefect(where);
      await fc.assert(
        fc.asyncProperty(defects, fc.nat(), async (defect, at) => {
          const request = baseRequest(op);
          const expected = expectedStatus(defect);
          if (tool) {
            const envelope = {
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name: tool.tool.name, arguments: toolArguments(tool, request) },
            };
            const answer = await sendWire(
              `${service.url}/mcp`,
              'POST',
              {
                authorization: `Bearer ${ada.token}`,
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': '2025-06-18',
              },
              JSON.stringify(envelope),
              defect,
            );
            const where = `MCP ${tool.tool.name} ${JSON.stringify(defect)} -> ${answer.status} ${answer.text.slice(0, 300)}`;
            expect(answer.status, where).toBe(expected);
            expect(answer.contentType, where).toMatch(/^application\/json/);
            const message = JSON.parse(answer.text);
            expect(message, where).toMatchObject({
              jsonrpc: '2.0',
              id: null,
              error: { code: expect.any(Number), message: expect.any(String) },
            });
            expect([-32700, -32600], where).toContain(message.error.code);
            return;
          }
          const path = pathWith(op, request, defect, at % Math.max(1, pathCount));
          const answer = await sendWire(
            `${service.url}${path}`,
            op.method.toUpperCase(),
            { authorization: `Bearer ${ada.token}`, 'if-match': '"v1"' },
            request.hasBody ? toJsonText(request.body) : undefined,
            defect,
          );
          const where = `REST ${op.operationId} ${path} ${JSON.stringify(defect)} -> ${answer.status} ${answer.text.slice(0, 300)}`;
          expect(answer.status, where).toBe(expected);
          expect(answer.contentType, where).toMatch(/^application\/problem\+json/);
          expectProblem(op, answer.status, JSON.parse(answer.text), where);
        }),
        { numRuns: WIRE_RUNS, seed },
      );
      expect(errorLogs, 'errors logged by the service').toEqual([]);
    },
    120_000,
  );

  it('sent every kind of defect', () => {
    expect([...wireKinds].sort()).toEqual(['broken', 'charset', 'encoding', 'oversize', 'percent']);
  });
});
