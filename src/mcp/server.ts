import {
  type CallToolResult,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
} from '@modelcontextprotocol/server';
import {
  databaseUnavailableResponse,
  type OperationRequest,
  type OperationResponse,
  type Pipeline,
} from '../api/pipeline.ts';
import { Problem } from '../api/problem.ts';
import type { FoundCaller } from '../authz/authenticator.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { refusedArguments, toOperationArguments, toToolResult } from './call.ts';
import { SERVER_INSTRUCTIONS } from './instructions.ts';
import { ParamsCheckingServer } from './invalid-params.ts';
import type { ToolDefinition } from './tools.ts';
import { isUnavailableResponse } from './unavailable.ts';

export interface ToolRegistry {
  byName: Map<string, ToolDefinition>;
  /** In catalogue order, for tools/list. */
  all: ToolDefinition[];
  serverInfo: { name: string; title: string; version: string };
}

export interface CallContext {
  /** The caller as the HTTP layer found it; confirmed there, or left to the pipeline (see http.ts). */
  found: FoundCaller;
  bearer: string;
  meta: OperationRequest['meta'];
  /** Set when the pipeline refused the credential: the HTTP layer answers 401 instead of the result. */
  refused?: boolean;
  /**
   * The pipeline's 503 problem, when the database was unreachable during a call: the HTTP layer answers
   * HTTP 503 with Retry-After and a JSON-RPC error (unavailable.ts), never a tool result.
   */
  unavailable?: OperationResponse;
  /** Counts a tool call by the way it was served (metrics). */
  countToolCall?: (path: 'direct' | 'sdk') => void;
  /**
   * The client's revision has no structuredContent (2025-03-26, or no revision header, which MCP reads
   * as 2025-03-26): the text of a result is all it shows the model, so it is the whole result.
   */
  textOnly?: boolean;
}

/**
 * How long a client may keep a tools/list result. The list is derived once at start and changes only with
 * a deployment; it is filtered by the caller's scopes, so it is `private` (never shared between tokens).
 */
const TOOLS_LIST_CACHE = { ttlMs: 300_000, cacheScope: 'private' } as const;

/**
 * One tools/call, whichever way it came in (the SDK's server below, or src/mcp/direct-call.ts): the
 * arguments go through the operation pipeline and its answer becomes the tool result, arguments the tool
 * refuses included (a tool error, see refusedArguments). A ProtocolError is the JSON-RPC error of the call
 * (an unknown tool).
 */
export async function callTool(
  registry: ToolRegistry,
  pipeline: Pipeline,
  context: CallContext,
  params: { name: string; arguments?: Record<string, unknown> },
): Promise<CallToolResult> {
  const { caller } = context.found;
  const definition = registry.byName.get(params.name);
  // Out-of-scope calls never get here (the HTTP layer answers them with a 403 challenge).
  if (!definition || !caller.scopes.has(definition.scope)) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
  }
  const args = toOperationArguments(definition, params.arguments ?? {});
  if (args instanceof Problem) {
    // The HTTP layer left a cached caller of this call to the pipeline, which refused arguments never
    // reach: it is confirmed here instead, so that a revoked token hears 401 (or, while the database is
    // away, 503), not what is wrong with its arguments, as at the REST door.
    if (context.found.cachedAtEpoch !== undefined) await confirmCached(pipeline, context);
    return refusedArguments(definition, args);
  }
  const response = await pipeline.execute({
    operationId: definition.spec.operationId,
    ...args,
    bearer: context.bearer,
    found: context.found,
    door: 'mcp',
    meta: context.meta,
  });
  if (response.status === 401) context.refused = true;
  if (isUnavailableResponse(response)) context.unavailable = response;
  return toToolResult(definition, response, context.textOnly);
}

/** Confirms the call's cached caller: `refused` when its credential no longer works, `unavailable` when it cannot tell. */
async function confirmCached(pipeline: Pipeline, context: CallContext): Promise<void> {
  try {
    if (!(await pipeline.confirm(context.bearer, 'mcp', context.found))) context.refused = true;
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    context.unavailable = databaseUnavailableResponse();
  }
}

/**
 * One low-level MCP server for one HTTP request (the endpoint is stateless, for both protocol eras): it
 * already knows who is calling, so tools/list is filtered by the token's scopes and tools/call goes
 * straight to the pipeline. The same definition serves 2026-07-28 requests and 2025-era ones. Params that
 * do not fit a method are invalid params, not an internal error (invalid-params.ts).
 */
export function createRequestServer(
  registry: ToolRegistry,
  pipeline: Pipeline,
  context: CallContext,
): Server {
  const server = new ParamsCheckingServer(registry.serverInfo, {
    capabilities: { tools: { listChanged: false } },
    instructions: SERVER_INSTRUCTIONS,
    cacheHints: { 'tools/list': TOOLS_LIST_CACHE },
  });
  const { caller } = context.found;

  server.setRequestHandler('tools/list', async (request) => {
    // Every tool comes on one page (no nextCursor), so no cursor is one this server handed out: MCP asks
    // for invalid params rather than a first page an agent would take for the page after its cursor.
    if (request.params?.cursor !== undefined) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'Invalid cursor: this server lists every tool on one page and hands out no cursor; send tools/list without one.',
      );
    }
    return {
      tools: registry.all.filter((definition) => caller.scopes.has(definition.scope)).map((d) => d.tool),
    };
  });

  server.setRequestHandler('tools/call', (request) => {
    context.countToolCall?.('sdk');
    return callTool(registry, pipeline, context, request.params);
  });
  return server;
}
