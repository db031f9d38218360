import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestHandler } from 'express';

// The request being served, wherever the code runs (a handler, the OAuth adapter, a limiter), so that
// every log line carries the request id without passing a logger down through every call.
const storage = new AsyncLocalStorage<{ requestId: string }>();

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** Runs the rest of the request inside its context; mount after the request id is assigned. */
export const requestContext: RequestHandler = (req, _res, next) => {
  storage.run({ requestId: String(req.id) }, next);
};
