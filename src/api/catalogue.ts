import { join } from 'node:path';
import { dereference, parse } from '@apidevtools/json-schema-ref-parser';
import { isScope, type Scope } from '../authz/scopes.ts';

// The operations of openapi.yaml as the pipeline needs them. REST routing, MCP tool derivation and the
// policy consistency check all read this one catalogue, so no door has its own idea of an operation.

export const OPENAPI_FILE = join(import.meta.dirname, '..', '..', 'openapi.yaml');

export interface OperationSpec {
  operationId: string;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  description: string;
  /** The one scope the operation needs; as object:action it is also what the policy is asked. */
  scope: Scope;
  /** Path parameter naming the target account's handle; absent: the caller's own (role `self`). */
  accountParam: string | undefined;
  /**
   * `x-mcp`: exposed as an MCP tool, with an optional explicit tool name, an optional description
   * written for agents (in tool and argument names) where the REST one speaks HTTP, and `destructive`
   * where the method alone would say it wrong (src/mcp/tools.ts).
   */
  mcp: { name?: string; description?: string; destructive?: boolean } | undefined;
  /**
   * `x-etag`: the resource uses optimistic concurrency (If-Match on writes, ETag on reads). `version`
   * (`x-etag: true`): every save stores a new version with a new tag; `revision`: edited in place, and an
   * update that changes nothing keeps its tag.
   */
  etag: 'version' | 'revision' | undefined;
  /** Query parameters whose schema is an integer: the text sent for them must be decimal digits. */
  integerQueryParams: string[];
  raw: Record<string, unknown>;
}

/** The parsed document: JSON as YAML gives it; its shape is what OpenAPI 3.1 says, checked by codegen. */
// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is walked dynamically by design.
export type OpenApiDocument = Record<string, any>;

export interface Catalogue {
  /** The document as written, `$ref`s and all (openapi-backend resolves them itself). */
  document: OpenApiDocument;
  /**
   * The same document with every `$ref` replaced by what it points to (@apidevtools/json-schema-ref-parser),
   * so readers of schemas (the MCP tools) never follow a reference themselves; `raw` of each operation is
   * taken from here. A recursive schema stays a cycle of objects.
   */
  resolved: OpenApiDocument;
  operations: Map<string, OperationSpec>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export async function loadCatalogue(file = OPENAPI_FILE): Promise<Catalogue> {
  // Parsed by the reference parser's YAML reader (the one openapi-backend loads anyway; YAML 1.2's core
  // schema, as the codegen's parser reads it), so no second YAML package stays loaded.
  const document = (await parse(file)) as OpenApiDocument;
  // Resolved from a copy of what was just parsed (the parser replaces references in place, and `document`
  // keeps them), with the file as its base, so a reference into another file next to it resolves too;
  // nothing is fetched over the network.
  const resolved = (await dereference(file, structuredClone(document), {
    resolve: { http: false },
  })) as OpenApiDocument;
  const operations = new Map<string, OperationSpec>();
  for (const [path, item] of Object.entries<OpenApiDocument>(resolved.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      if (!op.operationId) throw new Error(`openapi.yaml: ${where} has no operationId`);
      const scopes: string[] = (op.security ?? resolved.security ?? []).flatMap(
        (req: Record<string, string[]>) => Object.values(req).flat(),
      );
      if (scopes.length !== 1 || !isScope(scopes[0]!)) {
        throw new Error(
          `openapi.yaml: ${where} must name exactly one known scope in security (got ${scopes})`,
        );
      }
      const accountParam: string | undefined = op['x-account-param'];
      if (accountParam && !path.includes(`{${accountParam}}`)) {
        throw new Error(`openapi.yaml: ${where} x-account-param "${accountParam}" is not a path parameter`);
      }
      const mcp = op['x-mcp'];
      operations.set(op.operationId, {
        operationId: op.operationId,
        method,
        path,
        summary: op.summary ?? '',
        description: op.description ?? '',
        scope: scopes[0] as Scope,
        accountParam,
        mcp: mcp === true ? {} : mcp && typeof mcp === 'object' ? mcp : undefined,
        etag: op['x-etag'] === true ? 'version' : op['x-etag'] === 'revision' ? 'revision' : undefined,
        integerQueryParams: [...(item.parameters ?? []), ...(op.parameters ?? [])]
          .filter(
            (p: { in?: string; schema?: { type?: unknown } }) =>
              p.in === 'query' && p.schema?.type === 'integer',
          )
          .map((p: { name: string }) => p.name),
        raw: op,
      });
    }
  }
  return { document, resolved, operations };
}
