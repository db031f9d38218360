import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { OperationRequest, Pipeline } from '../api/pipeline.ts';
import { Problem } from '../api/problem.ts';
import type { Caller } from '../authz/caller.ts';
import { problemResult, toOperationArguments, toToolResult } from './call.ts';
import { SERVER_INSTRUCTIONS } from './instructions.ts';
import type { ToolDefinition } from './tools.ts';

export interface ToolRegistry {
  byName: Map<string, ToolDefinition>;
  /** In catalogue order, for tools/list. */
  all: ToolDefinition[];
  serverInfo: { name: string; title: string; version: string };
}

// Server would build its own Ajv (with formats) per instance, for elicitation we never send; with one server
// per request that cost showed in the benchmark, so every server shares this one.
const sharedValidator = new AjvJsonSchemaValidator();

export interface CallContext {
  caller: Caller;
  bearer: string;
  meta: OperationRequest['meta'];
}

/**
 * One low-level MCP server for one HTTP request (the endpoint is stateless): it already knows who is
 * calling, so tools/list is filtered by the token's scopes and tools/call goes straight to the pipeline.
 */
export function createRequestServer(
  registry: ToolRegistry,
  pipeline: Pipeline,
  context: CallContext,
): Server {
  const server = new Server(registry.serverInfo, {
    capabilities: { tools: { listChanged: false } },
    instructions: SERVER_INSTRUCTIONS,
    jsonSchemaValidator: sharedValidator,
  });
  const { caller } = context;

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: registry.all.filter((definition) => caller.scopes.has(definition.scope)).map((d) => d.tool),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const definition = registry.byName.get(request.params.name);
    // Out-of-scope calls never get here (the HTTP layer answers them with a 403 challenge).
    if (!definition || !caller.scopes.has(definition.scope)) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    }
    const args = toOperationArguments(definition, request.params.arguments ?? {});
    if (args instanceof Problem) return problemResult(args);
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
