import { JSONRPC_VERSION } from '@modelcontextprotocol/server';
import type { OperationResponse } from '../api/pipeline.ts';
import { type ProblemBody, problems } from '../api/problem.ts';
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE_DETAIL } from '../db/unavailable.ts';

// The one answer /mcp gives while the database is unreachable, however the request found that out: the
// caller lookup failing before the body is read, the cached caller's confirmation failing, or the pipeline
// answering a tool call with its 503 problem (a caller from the verified-caller cache reaches the pipeline
// without a statement of its own). HTTP 503 with Retry-After and a JSON-RPC error carrying the request's
// id: a 503 is no tool result, since the agent should retry rather than read it as the operation failing.

/** JSON-RPC's implementation-defined server error, the code of a 503 at /mcp (as in src/http-errors.ts). */
export const UNAVAILABLE_CODE = -32000;

export type JsonRpcId = string | number | null;

/** Whether the pipeline answered with the database-unavailable problem (its only 503). */
export function isUnavailableResponse(response: OperationResponse): boolean {
  return response.status === 503;
}

/** The request's id, when the body is one JSON-RPC message with a usable id; else null (a batch, unreadable). */
export function jsonRpcIdOf(body: unknown): JsonRpcId {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { id } = body as { id?: unknown };
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

export interface UnavailableAnswer {
  status: 503;
  headers: Record<string, string>;
  body: string;
}

/** The HTTP answer: 503, Retry-After, and the JSON-RPC error whose data is the problem (the pipeline's, if any). */
export function unavailableAnswer(id: JsonRpcId, response?: OperationResponse): UnavailableAnswer {
  const fallback = problems.serviceUnavailable(DATABASE_UNAVAILABLE_DETAIL, DATABASE_RETRY_AFTER_SECONDS);
  const problem = (response?.body as ProblemBody | undefined) ?? fallback.toJSON();
  const retryAfter = response?.headers?.['Retry-After'] ?? String(DATABASE_RETRY_AFTER_SECONDS);
  const message = typeof problem.detail === 'string' ? problem.detail : DATABASE_UNAVAILABLE_DETAIL;
  return {
    status: 503,
    headers: { 'Content-Type': 'application/json', 'Retry-After': retryAfter },
    body: JSON.stringify({
      jsonrpc: JSONRPC_VERSION,
      error: { code: UNAVAILABLE_CODE, message, data: problem },
      id,
    }),
  };
}
