import { type CallToolResult, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { OperationRequest, Pipeline } from '../api/pipeline.ts';
import { Problem } from '../api/problem.ts';
import type { Caller } from '../authz/caller.ts';
import { invalidArguments, toOperationArguments, toToolResult } from './call.ts';
import { SERVER_INSTRUCTIONS } from './instructions.ts';
import type { ToolDefinition } from './tools.ts';

export interface ToolRegistry {
  byName: Map<string, ToolDefinition>;
  /** In catalogue order, for tools/list. */
  all: ToolDefinition[];
  serverInfo: { name: string; title: string; version: string };
}

export interface CallContext {
  caller: Caller;
  bearer: string;
  meta: OperationRequest['meta'];
}

/**
 * How long a client may keep a tools/list result. The list is derived once at start and changes only with
 * a deployment; it is filtered by the caller's scopes, so it is `private` (never shared between tokens).
 */
const TOOLS_LIST_CACHE = { ttlMs: 300_000, cacheScope: 'private' } as const;

/**
 * One low-level MCP server for one HTTP request (the endpoint is stateless, for both protocol eras): it
 * already knows who is calling, so tools/list is filtered by the token's scopes and tools/call goes
 * straight to the pipeline. The same definition serves 2026-07-28 requests and 2025-era ones.
 */
export function createRequestServer(
  registry: ToolRegistry,
  pipeline: Pipeline,
  context: CallContext,
): Server {
  const server = new Server(registry.serverInfo, {
    capabilities: { tools: { listChanged: false } },
    instructions: SERVER_INSTRUCTIONS,
    cacheHints: { 'tools/list': TOOLS_LIST_CACHE },
  });
  const { caller } = context;

  server.setRequestHandler('tools/list', async () => ({
    tools: registry.all.filter((definition) => caller.scopes.has(definition.scope)).map((d) => d.tool),
  }));

  server.setRequestHandler('tools/call', async (request): Promise<CallToolResult> => {
    const definition = registry.byName.get(request.params.name);
    // Out-of-scope calls never get here (the HTTP layer answers them with a 403 challenge).
    if (!definition || !caller.scopes.has(definition.scope)) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    }
    const args = toOperationArguments(definition, request.params.arguments ?? {});
    if (args instanceof Problem) throw invalidArguments(definition, args);
    const response = await pipeline.execute({
      operationId: definition.spec.operationId,
      ...args,
      bearer: context.bearer,
      caller,
      door: 'mcp',
      meta: context.meta,
    });
    return toToolResult(definition, response);
  });
  return server;
}
