import type { Tool } from '@modelcontextprotocol/server';
import type { Catalogue, OpenApiDocument, OperationSpec } from '../api/catalogue.ts';
import type { Scope } from '../authz/scopes.ts';
import { describesObjects, inlineSchema, isPlainObjectSchema, type JsonSchema } from './json-schema.ts';

// MCP tools derived from the operations of openapi.yaml tagged `x-mcp`: no tool has code of its own. A
// tool's arguments are one flat object (path, query and header parameters next to the body's fields);
// `placement` says where each argument goes back to when the call runs through the operation pipeline.

type ArgumentPlace = { in: 'path' | 'query' | 'header'; name: string } | { in: 'body'; name: string };

export interface ToolDefinition {
  /** What tools/list shows. */
  tool: Tool;
  spec: OperationSpec;
  scope: Scope;
  /** Argument name -> where it belongs in the operation request. */
  placement: Map<string, ArgumentPlace>;
  /** The body is one argument (`body`) rather than flattened fields: it is not a closed object schema. */
  wholeBody: boolean;
  hasBody: boolean;
  /** The response body is not an object, so structuredContent is `{ result: body }`. */
  wrapsResult: boolean;
  /** REST wording to tool wording (toolWording), for what the tool says at run time too: its errors. */
  reword?: (text: string) => string;
}

const TOOL_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const WHOLE_BODY_ARGUMENT = 'body';

/** Every x-mcp operation as a tool; throws at start on anything a client could not use as it is. */
export function deriveTools(catalogue: Catalogue): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  const names = new Map<string, string>();
  const wording = toolWording(catalogue);
  for (const spec of catalogue.operations.values()) {
    if (!spec.mcp) continue;
    const where = `${spec.method.toUpperCase()} ${spec.path} (${spec.operationId})`;
    const name = spec.mcp.name ?? snakeCase(spec.operationId);
    if (!TOOL_NAME.test(name))
      throw new Error(`openapi.yaml: ${where} x-mcp name "${name}" is not snake_case`);
    const taken = names.get(name);
    if (taken) throw new Error(`openapi.yaml: ${where} and ${taken} both become the MCP tool "${name}"`);
    names.set(name, spec.operationId);
    tools.push(rewordTool(deriveTool(spec, name, where), wording));
  }
  return tools;
}

function deriveTool(spec: OperationSpec, name: string, where: string): ToolDefinition {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const placement = new Map<string, ArgumentPlace>();
  const add = (argument: string, place: ArgumentPlace, schema: JsonSchema, isRequired: boolean) => {
    const existing = placement.get(argument);
    if (existing) {
      throw new Error(
        `openapi.yaml: ${where}: the ${place.in} field "${place.name}" and the ${existing.in} field ` +
          `"${existing.name}" would both be the MCP argument "${argument}"; rename one of them`,
      );
    }
    placement.set(argument, place);
    properties[argument] = schema;
    if (isRequired) required.push(argument);
  };

  for (const raw of (spec.raw.parameters as unknown[] | undefined) ?? []) {
    const param = raw as OpenApiDocument;
    if (param.in === 'cookie') continue;
    const schema = inlineSchema(param.schema ?? {}, `${where} parameter ${param.name}`);
    if (param.description) schema.description = param.description;
    const argument = param.in === 'header' ? snakeCase(param.name) : param.name;
    add(argument, { in: param.in, name: param.name }, schema, param.in === 'path' || param.required === true);
  }

  const requestBody = spec.raw.requestBody as OpenApiDocument | undefined;
  const bodySchema = requestBody?.content?.['application/json']?.schema;
  let wholeBody = false;
  if (bodySchema) {
    const body = inlineSchema(bodySchema, `${where} request body`);
    const bodyRequired = requestBody.required === true;
    if (isPlainObjectSchema(body) && body.additionalProperties === false && body.properties) {
      const fieldsRequired = new Set(bodyRequired ? ((body.required as string[] | undefined) ?? []) : []);
      for (const [field, schema] of Object.entries(body.properties as Record<string, JsonSchema>)) {
        add(field, { in: 'body', name: field }, schema, fieldsRequired.has(field));
      }
    } else {
      // An open map or a union cannot be spread into named arguments without changing its meaning.
      wholeBody = true;
      add(WHOLE_BODY_ARGUMENT, { in: 'body', name: WHOLE_BODY_ARGUMENT }, body, bodyRequired);
    }
  }

  const inputSchema: Tool['inputSchema'] = {
    type: 'object',
    properties: properties as Tool['inputSchema']['properties'],
    ...(required.length > 0 ? { required } : {}),
    additionalProperties: false,
  };
  const output = outputSchemaOf(spec, where);
  const method = spec.method;
  // A whole save of a versioned resource (`x-etag: true`) stores a new version with a new etag every time,
  // even with the same arguments (and a repeat with the same if_match is refused with 412): a PUT of one is
  // not idempotent. (The glossary's edits by term, a PATCH, store nothing when repeated, and a repeat with
  // the same if_match is answered as done; they are still not marked idempotent, which only costs a client
  // a confirmation.)
  // A PUT or PATCH of anything else (a project, edited in place) sets what it names: the same call twice
  // leaves it as once, its etag included.
  const idempotent =
    method === 'get' ||
    method === 'delete' ||
    ((method === 'put' || method === 'patch') && spec.etag !== 'version');
  // MCP: `destructiveHint: false` promises only additive updates, and a client may run such a tool without
  // asking. A DELETE, and a PUT or PATCH that overwrites what it changes (a project's fields, a model's API
  // key, a member's role), are destructive; a POST adds. `x-mcp.destructive` says otherwise where the
  // method misleads: a save of the voice or the glossary stores a new version and keeps the old ones.
  const destructive =
    spec.mcp?.destructive ?? (method === 'delete' || method === 'put' || method === 'patch');
  const tool: Tool = {
    name,
    title: spec.summary,
    description: describe(spec),
    inputSchema,
    ...(output ? { outputSchema: output.schema } : {}),
    annotations: {
      title: spec.summary,
      readOnlyHint: method === 'get',
      destructiveHint: method !== 'get' && destructive,
      idempotentHint: idempotent,
      openWorldHint: false,
    },
  };
  return {
    tool,
    spec,
    scope: spec.scope,
    placement,
    wholeBody,
    hasBody: Boolean(bodySchema),
    wrapsResult: output?.wraps ?? false,
  };
}

/** The structuredContent of a conditional read whose `if_none_match` names the current version (HTTP 304). */
const NOT_MODIFIED_SCHEMA = {
  type: 'object',
  description: 'The version named in if_none_match is still the current one; the document is not sent again.',
  properties: {
    notModified: { const: true },
    etag: { type: 'string', description: 'The current version, the one you hold.' },
  },
  required: ['notModified', 'etag'],
  additionalProperties: false,
};

/** The success response's JSON schema, wrapped in `{ result }` when it is not an object; none for 204. */
function outputSchemaOf(spec: OperationSpec, where: string) {
  const responses = (spec.raw.responses ?? {}) as Record<string, unknown>;
  const status = Object.keys(responses)
    .filter((code) => /^2\d\d$/.test(code))
    .sort()[0];
  if (!status) throw new Error(`openapi.yaml: ${where} has no success response`);
  const schema = (responses[status] as OpenApiDocument | undefined)?.content?.['application/json']?.schema;
  if (!schema) return undefined;
  const inlined = inlineSchema(schema, `${where} response ${status}`);
  if (describesObjects(inlined) && responses['304']) {
    // A conditional read answers either the document or "not modified", and a client checks whichever
    // comes against this schema (a result without structuredContent is refused), so both are in it.
    return { schema: { type: 'object' as const, anyOf: [inlined, NOT_MODIFIED_SCHEMA] }, wraps: false };
  }
  if (describesObjects(inlined)) {
    // MCP wants `type: object` at the root, also where the document says it through allOf members.
    return { schema: { ...inlined, type: 'object' as const }, wraps: false };
  }
  return {
    schema: {
      type: 'object' as const,
      properties: { result: inlined },
      required: ['result'],
      additionalProperties: false,
    },
    wraps: true,
  };
}

function describe(spec: OperationSpec): string {
  const body = (spec.mcp?.description ?? spec.description).trim();
  const parts = [spec.summary.trim().replace(/\.?$/, '.'), body].filter(Boolean);
  parts.push(`Requires the ${spec.scope} scope.`);
  if (spec.accountParam) {
    parts.push(
      `Name the account by its handle in \`${spec.accountParam}\`; call list_accounts first to learn the handles you can use.`,
    );
  }
  return parts.join('\n\n');
}

/**
 * REST documentation names operations by operationId and speaks of HTTP headers; an agent knows only tools
 * and arguments. So every description a tool shows (its own, its arguments', its output fields') is
 * reworded at derivation: `saveGlossary` -> `save_glossary`, `If-Match` -> `if_match` (and `If-None-Match`
 * -> `if_none_match`), `ETag` -> `etag`.
 * openapi.yaml keeps its REST wording; where a sentence needs more than a word swapped, the operation's
 * `x-mcp.description` replaces its description for MCP.
 */
function toolWording(catalogue: Catalogue): (text: string) => string {
  const swaps = new Map<string, string>([
    ['If-Match', 'if_match'],
    ['If-None-Match', 'if_none_match'],
    ['ETag', 'etag'],
  ]);
  for (const spec of catalogue.operations.values()) {
    swaps.set(spec.operationId, spec.mcp?.name ?? snakeCase(spec.operationId));
  }
  const pattern = new RegExp(`(?<![\\w-])(${[...swaps.keys()].join('|')})(?![\\w-])`, 'g');
  return (text) =>
    text
      // REST says where the version travels twice (header and body); a tool result has only the field.
      .replace(/The `ETag` header \(also in the body\s+as `etag`\)/g, 'The `etag` field of the result')
      // A conditional read's "not modified" is a 304 over REST and a result of its own for a tool.
      .replace(
        /the answer is 304 with no body/g,
        'the result is `{ "notModified": true, "etag": … }` instead of the document',
      )
      // A pointer into what a REST request sends (/body/x, /query/x, /params/x) is /arguments/x in a call.
      .replace(/(?<![\w/])\/(?:body|query|params)\/(?=\w)/g, '/arguments/')
      .replace(pattern, (word) => swaps.get(word) ?? word);
}

function rewordTool(definition: ToolDefinition, reword: (text: string) => string): ToolDefinition {
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!node || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => [
        key,
        (key === 'description' || key === 'title') && typeof value === 'string'
          ? reword(value)
          : key === 'enum' || key === 'const' || key === 'default' || key === 'examples'
            ? value
            : walk(value),
      ]),
    );
  };
  const tool = definition.tool;
  return {
    ...definition,
    reword,
    tool: {
      ...tool,
      ...(tool.description ? { description: reword(tool.description) } : {}),
      inputSchema: walk(tool.inputSchema) as Tool['inputSchema'],
      ...(tool.outputSchema ? { outputSchema: walk(tool.outputSchema) as Tool['outputSchema'] } : {}),
    },
  };
}

/** `listProjects` -> `list_projects`, `If-Match` -> `if_match`. */
export function snakeCase(identifier: string): string {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}
