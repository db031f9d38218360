import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import type { RequestHandler } from 'express';

// The request being served, wherever the code runs (a handler, the OAuth adapter, a limiter), so that
// every log line carries the request id and the trace id without passing a logger down through every call.
interface RequestContext {
  requestId: string;
  /** W3C trace id (32 hex digits): the caller's, from `traceparent`, or a new one. */
  traceId: string;
}
const storage = new AsyncLocalStorage<RequestContext>();

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

export function currentTraceId(): string | undefined {
  return storage.getStore()?.traceId;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const traceIds = new WeakMap<IncomingMessage, string>();

/**
 * The trace this request belongs to, the same on every call for one request. With OpenTelemetry on, the
 * HTTP instrumentation has already continued the caller's trace in an active span: its id is the one the
 * exported spans carry. Otherwise the W3C `traceparent` header's, and without one a new id, so that the
 * log lines of one request can always be found together.
 */
function traceIdOf(req: IncomingMessage): string {
  let id = traceIds.get(req);
  if (id) return id;
  const active = trace.getActiveSpan()?.spanContext();
  if (active && isSpanContextValid(active)) id = active.traceId;
  else {
    const header = req.headers.traceparent;
    const match = typeof header === 'string' ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
    const valid = match && !/^0+$/.test(match[1]!) && !/^0+$/.test(match[2]!);
    // A random UUID's 32 hex digits: Node draws those from a buffered pool, where randomBytes(16) asked
    // OpenSSL for fresh bytes on every request (about 2% of a list request's CPU).
    id = valid ? match[1]! : randomUUID().replaceAll('-', '');
  }
  traceIds.set(req, id);
  return id;
}

/**
 * The ids of a request's lines, for a line written outside its context: the end of a request the client
 * or the server cut off is noticed by its socket, not by anything the request was running.
 */
export function requestIdsOf(req: IncomingMessage): { requestId?: string; traceId?: string } {
  const traceId = traceIds.get(req);
  return { ...(req.id !== undefined && { requestId: req.id }), ...(traceId !== undefined && { traceId }) };
}

/** Runs the rest of the request inside its context; mount after the request id is assigned. */
export const requestContext: RequestHandler = (req, _res, next) => {
  storage.run({ requestId: String(req.id), traceId: traceIdOf(req) }, next);
};
