import { type CallToolResult, ProtocolError } from '@modelcontextprotocol/server';
import type { OperationRequest, OperationResponse } from '../api/pipeline.ts';
import { Problem, type ProblemBody, problems } from '../api/problem.ts';
import { arrayLengths, jsonOf } from '../lib/spliced-json.ts';
import type { ToolDefinition } from './tools.ts';
import { isUnavailableResponse, UNAVAILABLE_CODE } from './unavailable.ts';

// A tool call is an operation request in disguise: the flat arguments go back to path, query, headers
// and body, the pipeline validates and runs them exactly as for REST, and its answer becomes a tool result.

type OperationArguments = Pick<OperationRequest, 'params' | 'query' | 'headers' | 'body'>;

/** Splits tool arguments by the tool's placement; an argument the tool does not have is a 400 problem. */
export function toOperationArguments(
  definition: ToolDefinition,
  args: Record<string, unknown>,
): OperationArguments | Problem {
  const request: OperationArguments = { params: {}, query: {}, headers: {}, body: undefined };
  const fields: Record<string, unknown> = {};
  const issues: { pointer: string; message: string }[] = [];
  for (const [argument, value] of Object.entries(args)) {
    const place = definition.placement.get(argument);
    // A REST path, query or header value is text, which validation coerces to the parameter's type
    // (`limit=2`); a tool argument is typed JSON already, and coercing it took what inputSchema and REST
    // refuse (`limit: true` read as 1). So its type must be one that inputSchema names.
    const mistyped =
      place && place.in !== 'body' && value !== null
        ? typeIssue(definition.tool.inputSchema.properties?.[argument], value)
        : undefined;
    if (!place)
      issues.push({ pointer: `/arguments/${argument}`, message: 'is not an argument of this tool' });
    // An explicit null for an optional parameter is how some clients say "not given".
    else if (place.in !== 'body' && value === null) continue;
    // Path and header values are text in a URL or header; an object or array has no such form (and
    // String() of a deeply nested array overflows the stack).
    else if ((place.in === 'path' || place.in === 'header') && typeof value === 'object')
      issues.push({ pointer: `/arguments/${argument}`, message: 'must be a string' });
    else if (mistyped) issues.push({ pointer: `/arguments/${argument}`, message: mistyped });
    else if (place.in === 'path') request.params[place.name] = String(value);
    else if (place.in === 'query') request.query[place.name] = value;
    else if (place.in === 'header') request.headers[place.name.toLowerCase()] = String(value);
    else if (definition.wholeBody) request.body = value;
    else fields[place.name] = value;
  }
  if (issues.length > 0) return problems.validation(issues);
  if (definition.hasBody && !definition.wholeBody) request.body = fields;
  return request;
}

/** `must be integer` (Ajv's words) when a value's JSON type is none of the types the schema names. */
function typeIssue(schema: unknown, value: unknown): string | undefined {
  const type = (schema as { type?: unknown } | undefined)?.type;
  if (type === undefined) return undefined;
  const types = (Array.isArray(type) ? type : [type]) as string[];
  return types.some((name) => isOfType(name, value)) ? undefined : `must be ${types.join(',')}`;
}

function isOfType(type: string, value: unknown): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/**
 * Arguments that do not fit the tool's inputSchema (or that the operation's own checks refuse with a
 * pointer): a tool error the model reads, not a JSON-RPC error its client would keep from it, so that it
 * can correct the call and try again (MCP's rule since 2025-11-25, SEP-1303, and what the SDK's own tool
 * server does at every revision). The result holds the 400 problem with every pointer rewritten to the
 * argument the agent sent (`/arguments/handle`, `/arguments/if_match`), not to REST's `/body/handle`.
 */
export function refusedArguments(definition: ToolDefinition, problem: Problem | ProblemBody): CallToolResult {
  const body = inAgentTerms(definition, problem instanceof Problem ? problem.toJSON() : problem);
  const errors = body.errors ?? [];
  // "pointer: message": a message of our own is a sentence, which would otherwise run into the pointer.
  const where = errors.map((issue) => `${issue.pointer}: ${issue.message}`).join('; ');
  return problemResult({
    ...body,
    detail: `Invalid arguments for tool ${definition.tool.name}${where ? `: ${where}` : ''}`,
    errors,
  });
}

/**
 * A problem in the agent's terms, whatever its status (a 403 on a scope too): its pointers name the
 * arguments the agent sent, and its words name tools and arguments, not operationIds and HTTP headers
 * ("save_voice saves the first version", "your if_match is …").
 */
function inAgentTerms(definition: ToolDefinition, body: ProblemBody): ProblemBody {
  const reword = definition.reword ?? ((text: string) => text);
  if (!body || typeof body !== 'object') return body;
  return {
    ...body,
    ...(typeof body.detail === 'string' ? { detail: reword(body.detail) } : {}),
    ...(Array.isArray(body.errors)
      ? {
          errors: body.errors.map((issue) => ({
            ...issue,
            pointer: argumentPointer(definition, issue.pointer),
            message: reword(issue.message),
          })),
        }
      : {}),
  };
}

const PLACES: Record<string, 'path' | 'query' | 'header' | 'body'> = {
  params: 'path',
  query: 'query',
  header: 'header',
  headers: 'header',
  body: 'body',
};

/** `/body/entries/0/term` -> `/arguments/entries/0/term`; `/header/if-match` -> `/arguments/if_match`. */
function argumentPointer(definition: ToolDefinition, pointer: string): string {
  if (pointer.startsWith('/arguments')) return pointer;
  const [, section = '', name, ...rest] = pointer.split('/');
  const place = PLACES[section];
  if (!place) return pointer;
  if (place === 'body' && definition.wholeBody) return `/arguments/body${pointer.slice('/body'.length)}`;
  if (name === undefined) return '/arguments';
  for (const [argument, target] of definition.placement) {
    if (target.in === place && target.name.toLowerCase() === name.toLowerCase()) {
      return ['', 'arguments', argument, ...rest].join('/');
    }
  }
  return pointer;
}

/**
 * Up to this size the text content repeats the result as JSON, for clients that read only text; above it,
 * the text is a short summary, so a large result (a 5,000-entry glossary) is not sent twice. A client of
 * a revision without structuredContent gets the whole JSON as text whatever its size.
 */
export const FULL_TEXT_MAX_BYTES = 4 * 1024;

/**
 * Success: structuredContent, and the same as JSON text (a summary when it is large). Failure: isError with
 * the problem details only. The database being unreachable (503) is no result of the tool: it is a
 * JSON-RPC error, which the HTTP layer answers with HTTP 503 and Retry-After (unavailable.ts).
 */
export function toToolResult(
  definition: ToolDefinition,
  response: OperationResponse,
  textOnly = false,
): CallToolResult {
  if (isUnavailableResponse(response)) {
    const body = response.body as ProblemBody | undefined;
    throw new ProtocolError(UNAVAILABLE_CODE, body?.detail ?? 'Service unavailable', body);
  }
  if (response.status >= 400) {
    if (isValidationProblem(response)) return refusedArguments(definition, response.body as ProblemBody);
    return problemResult(inAgentTerms(definition, response.body as ProblemBody));
  }
  if (response.status === 304) {
    // The tool's outputSchema allows this shape next to the document (tools.ts), so clients accept it.
    const etag = response.headers?.ETag ?? '';
    // Without structuredContent (2025-03-26) the text is the result's JSON, as for every other result.
    if (textOnly) return { content: [{ type: 'text', text: jsonOf({ notModified: true, etag }) }] };
    return {
      structuredContent: { notModified: true, etag },
      content: [
        {
          type: 'text',
          text: `Not modified: ${etag} is still the current version; the copy you hold is up to date.`,
        },
      ],
    };
  }
  if (response.body === undefined) {
    return { content: [{ type: 'text', text: `Done (HTTP ${response.status}, no content).` }] };
  }
  const structured = definition.wrapsResult
    ? { result: response.body }
    : (response.body as Record<string, unknown>);
  const json = jsonOf(structured);
  // A string is at least as many bytes as characters: a long one is not measured (a glossary: 1 MB).
  const small = json.length <= FULL_TEXT_MAX_BYTES && Buffer.byteLength(json) <= FULL_TEXT_MAX_BYTES;
  // A client of a revision without structuredContent (2025-03-26) reads the text alone: the whole JSON,
  // sent once (it used to get structuredContent too, a second copy it ignores: 2.3 MB for a 1 MB glossary).
  if (textOnly) return { content: [{ type: 'text', text: json }] };
  const text = small ? json : summary(definition, structured, json);
  structuredJson.set(structured, json);
  return { structuredContent: structured, content: [{ type: 'text', text }] };
}

/** The JSON text of each structuredContent toToolResult made, so that an answer need not serialise it again. */
const structuredJson = new WeakMap<object, string>();

/** A result's structuredContent as JSON text: the text toToolResult made, when it made this one. */
export function structuredJsonOf(result: CallToolResult): string | undefined {
  const structured = result.structuredContent;
  return typeof structured === 'object' && structured !== null ? structuredJson.get(structured) : undefined;
}

/** What a large result holds, in a line: its lists and their lengths, and the cursor of the next page. */
function summary(definition: ToolDefinition, structured: Record<string, unknown>, json: string): string {
  const lists = arrayLengths(structured).map(([key, length]) => `${length} ${key}`);
  const next =
    typeof structured.nextCursor === 'string'
      ? ` The next page starts at cursor "${structured.nextCursor}".`
      : '';
  const size = `${Math.ceil(Buffer.byteLength(json) / 1024)} kB`;
  // What an agent acts on next without the lists: the version a later edit names in if_match. A client
  // that hands the model the text alone could not follow "reload and retry" without it.
  const version =
    typeof structured.etag === 'string'
      ? ` Version ${typeof structured.version === 'number' ? `${structured.version}, ` : ''}etag ${structured.etag}.`
      : '';
  return (
    `${definition.tool.name}: ${lists.length > 0 ? lists.join(', ') : 'a result'} (${size} as JSON).${version} ` +
    `The full result is in structuredContent.${next}`
  );
}

/** A 400 whose body points at what was sent: the arguments broke the tool's schema. */
function isValidationProblem(response: OperationResponse): boolean {
  const body = response.body as ProblemBody | undefined;
  return response.status === 400 && Array.isArray(body?.errors) && body.errors.length > 0;
}

function problemResult(problem: unknown): CallToolResult {
  const body = problem instanceof Problem ? problem.toJSON() : problem;
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}
