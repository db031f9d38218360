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
  type ProtocolError,
  SERVER_INFO_META_KEY,
  TRACEPARENT_META_KEY,
  TRACESTATE_META_KEY,
} from '@modelcontextprotocol/server';

// The hottest MCP request, a 2026-07-28 tools/call, answered without building the SDK's per-request server,
// transport, web Request and web Response around it: those cost about twice the operation itself (see
// docs/performance.md). Only the plain case comes here, one that the SDK would hand to our tools/call
// handler unchanged: the SDK's own classifier accepts the envelope, the standard headers repeat the body
// exactly, and the params hold nothing the SDK would act on. Everything else (other methods, other
// revisions, batches, a missing or differing header, task or progress requests) goes through the SDK as
// before. test/mcp/direct-call.test.ts sends the same requests both ways and requires the same answers, so an
// SDK upgrade that changes the wire shows up there. MCP_DIRECT_TOOL_CALLS=false turns this path off.

/** The revision this path was checked against; a newer one goes through the SDK until it is checked too. */
const DIRECT_REVISION = '2026-07-28';

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
const PLAIN_PARAM_KEYS = new Set(['name', 'arguments', '_meta']);

export interface PlainToolCall {
  id: string | number;
  params: { name: string; arguments?: Record<string, unknown> };
}

/** The call, when the request is a plain 2026-07-28 tools/call; undefined sends it through the SDK. */
export function plainToolCall(body: unknown, headers: IncomingHttpHeaders): PlainToolCall | undefined {
  if (!isPlainObject(body) || body.method !== 'tools/call') return undefined;
  const { id, params } = body;
  if ((typeof id !== 'string' && typeof id !== 'number') || !isPlainObject(params)) return undefined;
  const { name, arguments: args, _meta: meta } = params;
  if (typeof name !== 'string' || (args !== undefined && !isPlainObject(args))) return undefined;
  if (!Object.keys(params).every((key) => PLAIN_PARAM_KEYS.has(key))) return undefined;
  if (!isPlainObject(meta) || !Object.keys(meta).every((key) => PLAIN_META_KEYS.has(key))) return undefined;
  if (
    headers['mcp-protocol-version'] !== DIRECT_REVISION ||
    headers['mcp-method'] !== 'tools/call' ||
    headers['mcp-name'] !== name
  ) {
    return undefined;
  }
  // The SDK's own decision on the envelope (its shape, the claimed revision against the header).
  const outcome = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: DIRECT_REVISION,
    mcpMethodHeader: 'tools/call',
    mcpNameHeader: name,
    body,
  });
  if (outcome.kind !== 'modern' || outcome.messageKind !== 'request') return undefined;
  if (outcome.classification.revision !== DIRECT_REVISION) return undefined;
  return { id, params: { name, ...(args !== undefined && { arguments: args as Record<string, unknown> }) } };
}

/** The JSON-RPC answer the SDK sends at 2026-07-28: the result stamped complete and with the server's identity. */
export function resultAnswer(
  call: PlainToolCall,
  result: CallToolResult,
  serverInfo: { name: string; title: string; version: string },
) {
  return {
    result: { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: serverInfo } },
    jsonrpc: JSONRPC_VERSION,
    id: call.id,
  };
}

/** A call the tool refused (unknown tool, arguments that do not fit): a JSON-RPC error, HTTP 200, as the SDK answers it. */
export function errorAnswer(call: PlainToolCall, error: ProtocolError) {
  return {
    jsonrpc: JSONRPC_VERSION,
    id: call.id,
    error: {
      code: error.code,
      message: error.message,
      ...(error.data !== undefined && { data: error.data }),
    },
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
