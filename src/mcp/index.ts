import type { Router } from 'express';
import type { Catalogue } from '../api/catalogue.ts';
import type { Pipeline } from '../api/pipeline.ts';
import { createMcpRouter, type McpHttpOptions } from './http.ts';
import type { ToolRegistry } from './server.ts';
import { deriveTools } from './tools.ts';

/** The tools of the catalogue's x-mcp operations, derived once at start. */
export function createToolRegistry(catalogue: Catalogue): ToolRegistry {
  const all = deriveTools(catalogue);
  return {
    all,
    byName: new Map(all.map((definition) => [definition.tool.name, definition])),
    serverInfo: {
      name: 'l10n',
      title: 'Localization service',
      version: String(catalogue.document.info?.version ?? '0.0.0'),
    },
  };
}

/** The MCP server at /mcp, in front of the same operation pipeline as the REST API. */
export function createMcp(
  pipeline: Pipeline,
  options: Omit<McpHttpOptions, 'registry' | 'pipeline'>,
): { router: Router; registry: ToolRegistry } {
  const registry = createToolRegistry(pipeline.catalogue);
  return { router: createMcpRouter({ ...options, registry, pipeline }), registry };
}
