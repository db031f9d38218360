// The limit on failed bearer authentications for the API and MCP doors: per client address, only answers
// that end in 401 to a request that presented credentials count, and an address over its budget gets 429 for
// every request until its window ends.
// Not express-rate-limit's own middleware: it counts every request on arrival and takes successes back
// when they finish, so more than the budget of valid requests in flight at once from one address (every
// user behind a proxy without TRUST_PROXY) would be refused. Its stores are used as they are.
//
// The failures are counted in the limiter store (Redis, shared by every instance, or this instance's
// memory), but whether an address is over its budget is decided from memory: each instance keeps the
// addresses it knows to be over, learnt from the count that its own failure brought back and, with Redis,
// from the other instances, which announce each address they stop (`BlockChannel`). A request from an
// address that has not failed therefore costs no round trip to the store. Asking the store on arrival, as
// this limiter did before, was one Redis command for every API and MCP request (docs/performance.md).
//
// What an instance can miss: an address stopped while it was not listening (before it started, or while
// its Redis connection was down). Its next failure from that address brings back the shared count and
// stops the address there too, so the budget holds across instances within one failure each.
import type { Request, RequestHandler } from 'express';
import type { Options, Store } from 'express-rate-limit';
import { problems, sendProblem } from '../api/problem.ts';

/** An address over its budget, for how much longer. */
interface Block {
  key: string;
  forMs: number;
}

/**
 * How instances tell each other of a stopped address (Redis pub/sub); none on a single instance. The
 * messages are this module's own (`receive` reads what `publish` was given).
 */
interface BlockChannel {
  publish(message: string): Promise<unknown>;
}

export interface FailedAuthLimiterOptions {
  store: Store;
  keyOf(req: Request): string;
  /** Failures per window; the request after the last one allowed is refused. */
  limit: number;
  windowMs: number;
  channel?: BlockChannel;
  onRefused(): void;
  onStoreError(error: unknown): void;
  /** The store's init failed (Redis not connected yet at start); the store recovers on first use. */
  onStoreInitError?(error: unknown): void;
}

export interface FailedAuthLimiter {
  middleware: RequestHandler;
  /** A message from the channel: a block another instance announced; anything else is ignored. */
  receive(message: string): void;
}

/**
 * Stopped addresses kept at most. Each took a whole budget of failures to earn; beyond the bound, the one
 * stopped longest ago is forgotten, and stopped again by its next failure (the store still counts it).
 */
const MAX_BLOCKED = 100_000;

export function createFailedAuthLimiter(options: FailedAuthLimiterOptions): FailedAuthLimiter {
  const { store, keyOf, limit, windowMs, channel } = options;
  const ready = Promise.resolve(store.init?.({ windowMs } as Options)).catch(
    options.onStoreInitError ?? options.onStoreError,
  );
  // Insertion order is nearly expiry order (every block lasts at most one window), so the oldest go first.
  const blockedUntil = new Map<string, number>();

  const remember = ({ key, forMs }: Block) => {
    const now = Date.now();
    blockedUntil.delete(key);
    blockedUntil.set(key, now + forMs);
    for (const [oldest, until] of blockedUntil) {
      if (until > now && blockedUntil.size <= MAX_BLOCKED) break;
      blockedUntil.delete(oldest);
    }
  };

  const countFailure = async (key: string) => {
    try {
      await ready;
      const { totalHits, resetTime } = await store.increment(key);
      if (totalHits < limit) return;
      const block = { key, forMs: resetTime ? resetTime.getTime() - Date.now() : windowMs };
      remember(block);
      await channel?.publish(JSON.stringify(block));
    } catch (error) {
      // A store outage must not take the API down: the failure goes uncounted.
      options.onStoreError(error);
    }
  };

  const middleware: RequestHandler = (req, res, next) => {
    const key = keyOf(req);
    const until = blockedUntil.get(key);
    if (until !== undefined) {
      const retryAfter = Math.ceil((until - Date.now()) / 1000);
      if (retryAfter > 0) {
        options.onRefused();
        // The API and MCP doors speak problem+json, not OAuth error bodies.
        return sendProblem(
          res,
          problems.tooManyRequests(
            `Too many failed authentications from this address; retry after ${retryAfter} seconds.`,
            retryAfter,
          ),
        );
      }
      blockedUntil.delete(key);
    }
    // A request without credentials is answered 401 too, the challenge every MCP client starts from to find
    // the authorization server: no guess at a token, so not counted. Counted, agents starting up on one
    // machine, a CI runner or behind one NAT locked each other out, valid tokens included, for a minute.
    const presentedCredentials = req.headers.authorization !== undefined;
    res.once('finish', () => {
      if (res.statusCode === 401 && presentedCredentials) void countFailure(key);
    });
    next();
  };

  const receive = (message: string) => {
    const block = parseBlock(message, windowMs);
    if (block) remember(block);
  };

  return { middleware, receive };
}

/** A block as another instance published it, or undefined for anything else on the channel. */
function parseBlock(message: string, windowMs: number): Block | undefined {
  let value: unknown;
  try {
    value = JSON.parse(message);
  } catch {
    return undefined;
  }
  const { key, forMs } = (value ?? {}) as Partial<Block>;
  return typeof key === 'string' && key.length <= 256 && Number.isFinite(forMs) && forMs! > 0
    ? { key, forMs: Math.min(forMs!, windowMs) }
    : undefined;
}
