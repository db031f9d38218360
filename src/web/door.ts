// The web door into the operation pipeline. A page does what the API does by naming an operationId, with
// a caller built from the browser session: the person's own roles decide, and the session holds every
// scope (the person is there in person, so there is no narrower grant to respect). Authorization,
// validation, limits and audit therefore run exactly as for REST and MCP, in src/api/pipeline.ts.
import type { Request } from 'express';
import type { OperationRequest, OperationResponse, Pipeline } from '../api/pipeline.ts';
import type { Caller } from '../authz/caller.ts';
import { ALL_SCOPES } from '../authz/scopes.ts';
import type { SignedIn } from '../identity/sessions.ts';

const EVERY_SCOPE = new Set(ALL_SCOPES);

export function sessionCaller(who: SignedIn): Caller {
  return {
    userId: who.userId,
    scopes: EVERY_SCOPE,
    credential: { kind: 'session', sessionId: who.sessionId },
  };
}

interface CallInput {
  params?: Record<string, string>;
  query?: Record<string, unknown>;
  body?: unknown;
  ifMatch?: string;
  ifNoneMatch?: string;
}

export type WebCall = (operationId: string, input?: CallInput) => Promise<OperationResponse>;

/** An operation caller for one request of one signed-in person. */
export function webCaller(pipeline: Pipeline, req: Request, who: SignedIn): WebCall {
  const caller = sessionCaller(who);
  return (operationId, input = {}) =>
    pipeline.execute({
      operationId,
      params: input.params ?? {},
      query: input.query ?? {},
      body: input.body,
      headers: { 'if-match': input.ifMatch, 'if-none-match': input.ifNoneMatch },
      bearer: undefined,
      found: { caller },
      door: 'web',
      meta: requestMeta(req),
    });
}

/** Where a page's request came from, as an audit event records it. */
export function requestMeta(req: Request): OperationRequest['meta'] {
  return {
    ip: req.ip,
    userAgent: req.get('user-agent'),
    requestId: req.id === undefined ? undefined : String(req.id),
  };
}
