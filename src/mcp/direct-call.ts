import type { IncomingHttpHeaders } from 'node:http';
import {
  BAGGAGE_META_KEY,
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  classifyInboundRequest,
  JSONRPC_VERSION,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  SERVER_INFO_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
  TRACEPARENT_META_KEY,
  TRACESTATE_META_KEY,
} from '@modelcontextprotocol/server';
import { structuredJsonOf } from './call.ts';
import type { ToolRegistry } from './server.ts';

// The hottest MCP request, a tools/call, answered without building the SDK's per-request server, transport,
// web Request and web Response around it: those cost about twice the operation itself (see
// docs/performance.md). Only the plain case comes here, one the SDK would hand to our tools/call handler
// unchanged, in either era:
//   - 2026-07-28: the SDK's own classifier accepts the envelope, and the standard headers repeat the body;
//   - 2025 (the stateless legacy path): no envelope (so nothing for the classifier to decide), a revision
//     header the SDK serves, an Accept that takes both JSON and an event stream (the SDK answers such a call
//     with a one-message stream).
// In both, a JSON-RPC 2.0 request and nothing more, whose params hold nothing the SDK would act on. Everything else (other methods and revisions,
// batches, a missing or differing header, progress or task requests) goes through the SDK as before.
// test/mcp/direct-call.test.ts sends the same requests to an instance with and one without this path and
// requires the same answers, so an SDK upgrade that changes the wire shows up there first.
// MCP_DIRECT_TOOL_CALLS=false turns this path off.

/** The modern revision this path was checked against; a newer one goes through the SDK until checked too. */
const MODERN_REVISION = '2026-07-28';
/** The 2025 revisions it was checked against, as long as the SDK still serves them. */
const LEGACY_REVISIONS = new Set(
  ['2025-03-26', '2025-06-18', '2025-11-25'].filter((revision) =>
    SUPPORTED_PROTOCOL_VERSIONS.includes(revision),
  ),
);

/** `_meta` keys the SDK only records (envelope, logging level, trace context); any other sends the SDK path. */
const PLAIN_META_KEYS = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  TRACEPARENT_META_KEY,
  TRACESTATE_META_KEY,
  BAGGAGE_META_KEY,
]);
/** A JSON-RPC request and nothing more; anything else the SDK may read differently. */
const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const MODERN_PARAM_KEYS = new Set(['name', 'arguments', '_meta']);
const LEGACY_PARAM_KEYS = new Set(['name', 'arguments']);

export interface PlainToolCall {
  era: 'modern' | 'legacy';
  id: string | number;
  params: { name: string; arguments?: Record<string, unknown> };
}

/** The call, when the request is a plain tools/call of either era; undefined sends it through the SDK. */
export function plainToolCall(body: unknown, headers: IncomingHttpHeaders): PlainToolCall | undefined {
  if (!isPlainObject(body) || body.method !== 'tools/call' || body.jsonrpc !== JSONRPC_VERSION)
    return undefined;
  if (!Object.keys(body).every((key) => MESSAGE_KEYS.has(key))) return undefined;
  const { id, params } = body;
  if ((typeof id !== 'string' && !Number.isSafeInteger(id)) || !isPlainObject(params)) return undefined;
  const { name, arguments: args } = params;
  if (typeof name !== 'string' || (args !== undefined && !isPlainObject(args))) return undefined;
  // The SDK's zod parsing drops an argument named `__proto__` where callTool would refuse it; the SDK's
  // answer is the one that counts, so such a call goes there.
  if (args !== undefined && Object.hasOwn(args, '__proto__')) return undefined;
  const era = plainEra(body, params, name, headers);
  if (!era) return undefined;
  return { era, id: id as string | number, params: { name, ...(args !== undefined && { arguments: args }) } };
}

function plainEra(
  body: Record<string, unknown>,
  params: Record<string, unknown>,
  name: string,
  headers: IncomingHttpHeaders,
): PlainToolCall['era'] | undefined {
  const revision = headers['mcp-protocol-version'];
  if (revision === MODERN_REVISION) {
    const meta = params._meta;
    if (!Object.keys(params).every((key) => MODERN_PARAM_KEYS.has(key))) return undefined;
    if (!isPlainObject(meta) || !Object.keys(meta).every((key) => PLAIN_META_KEYS.has(key))) return undefined;
    if (headers['mcp-method'] !== 'tools/call' || headers['mcp-name'] !== name) return undefined;
    return envelopeAccepted(body, meta, name) ? 'modern' : undefined;
  }
  if (typeof revision === 'string' && LEGACY_REVISIONS.has(revision)) {
    if (!Object.keys(params).every((key) => LEGACY_PARAM_KEYS.has(key))) return undefined;
    const accept = headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
    // A JSON-RPC request (checked above) with no `_meta`, under a 2025 revision header: no envelope claim,
    // which is all the SDK's classifier would decide here (it costs about 2% of such a call).
    return 'legacy';
  }
  return undefined;
}

/**
 * The SDK classifier's verdict on a plain 2026-07-28 tools/call: a request at that revision, or not. Once
 * the checks above hold (a JSON-RPC request and nothing more, the headers repeating the body, only
 * envelope keys in `_meta`), the classifier's answer depends on the `_meta` object alone: it tells a
 * request from a response or an error by members such a body does not have, and reads `params` only for
 * the envelope. An agent sends the same envelope on every call, so its verdict is kept by the envelope's
 * JSON: the classifier runs four zod parses and the envelope check, about a tenth of a direct call.
 */
const verdicts = new Map<string, boolean>();
const MAX_VERDICTS = 256;

function envelopeAccepted(
  body: Record<string, unknown>,
  meta: Record<string, unknown>,
  name: string,
): boolean {
  const key = JSON.stringify(meta);
  let accepted = verdicts.get(key);
  if (accepted === undefined) {
    const outcome = classifyInboundRequest({
      httpMethod: 'POST',
      protocolVersionHeader: MODERN_REVISION,
      mcpMethodHeader: 'tools/call',
      mcpNameHeader: name,
      body,
    });
    accepted =
      outcome.kind === 'modern' &&
      outcome.messageKind === 'request' &&
      outcome.classification.revision === MODERN_REVISION;
    if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!);
    verdicts.set(key, accepted);
  }
  return accepted;
}

export interface DirectAnswer {
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * The answer the SDK sends for this call, HTTP 200: a result (stamped complete and with the server's
 * identity at 2026-07-28) or the JSON-RPC error of a refused call; JSON at 2026-07-28, a one-message event
 * stream on the 2025 path.
 */
export function directAnswer(
  call: PlainToolCall,
  outcome: CallToolResult | ProtocolError,
  serverInfo: ToolRegistry['serverInfo'],
): DirectAnswer {
  const text =
    outcome instanceof ProtocolError ? errorJson(call, outcome) : resultJson(call, outcome, serverInfo);
  if (call.era === 'modern') {
    const body = Buffer.from(text);
    return { headers: { 'Content-Type': 'application/json', 'Content-Length': String(body.length) }, body };
  }
  return {
    headers: {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-transform',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    },
    body: Buffer.from(`event: message\ndata: ${text}\n\n`),
  };
}

function errorJson(call: PlainToolCall, error: ProtocolError): string {
  const { code, message, data } = error;
  return JSON.stringify({
    jsonrpc: JSONRPC_VERSION,
    id: call.id,
    error: { code, message, ...(data !== undefined && { data }) },
  });
}

/** The result message; the structured content's JSON is spliced in as toToolResult made it (a list page: 5 kB). */
function resultJson(
  call: PlainToolCall,
  result: CallToolResult,
  serverInfo: ToolRegistry['serverInfo'],
): string {
  const structured = structuredJsonOf(result);
  if (structured === undefined) {
    return JSON.stringify({
      result: stamped(call, result, serverInfo),
      jsonrpc: JSONRPC_VERSION,
      id: call.id,
    });
  }
  const { structuredContent: _, ...rest } = stamped(call, result, serverInfo);
  const head = JSON.stringify({ ...rest, structuredContent: null }).slice(0, -'null}'.length);
  return `{"result":${head}${structured}},"jsonrpc":"${JSONRPC_VERSION}","id":${JSON.stringify(call.id)}}`;
}

function stamped(call: PlainToolCall, result: CallToolResult, serverInfo: ToolRegistry['serverInfo']) {
  if (call.era === 'legacy') return result;
  return { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
