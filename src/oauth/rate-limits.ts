// Spec section 8: request limits on the OAuth endpoints, plus a limit on failed bearer authentications
// for the API and MCP pipelines. Counters live in Redis when REDIS_URL is set, so every instance counts
// against the same budget; in memory otherwise (one instance).
import express, { type Request, type RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, type Options, rateLimit, type Store } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore } from 'rate-limit-redis';
import { problems, sendProblem } from '../api/problem.ts';
import type { ServiceContext } from '../app.ts';

export const LIMITS = {
  register: { perMinute: 5 },
  token: { perMinute: 30 },
  failedAuth: { perMinute: 20 },
} as const;

const WINDOW_MS = 60_000;
const KEY_PREFIX = 'l10n:rl:';

export interface RateLimits {
  /** POST /oauth/register: per client address. */
  register: RequestHandler;
  /** POST /oauth/token, /oauth/revoke, /oauth/introspect (one budget each): per address and client id. */
  tokenEndpoint(name: 'token' | 'revoke' | 'introspect'): RequestHandler[];
  /**
   * For the API and MCP pipelines: counts only responses that end in 401 (a bearer token that was
   * missing, unknown, expired or revoked), per address; over the limit every request gets 429.
   */
  failedAuth: RequestHandler;
  close(): Promise<void>;
}

export function createRateLimits(ctx: ServiceContext): RateLimits {
  const redis = ctx.config.redisUrl
    ? new Redis(ctx.config.redisUrl, { maxRetriesPerRequest: 1, enableAutoPipelining: true })
    : undefined;
  redis?.on('error', (error) => ctx.logger.warn({ err: error }, 'rate-limit Redis connection error'));

  // express-rate-limit needs one store per limiter; all Redis stores share the one connection.
  const store = (name: string): Store | undefined =>
    redis
      ? new RedisStore({
          prefix: `${KEY_PREFIX}${name}:`,
          sendCommand: (command: string, ...args: string[]) =>
            redis.call(command, ...args) as Promise<number>,
        })
      : undefined;

  const common = (name: string, limit: number): Partial<Options> => ({
    windowMs: WINDOW_MS,
    limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    identifier: name,
    store: store(name),
    // A Redis outage must not take sign-in down: the request goes through and the error is logged.
    passOnStoreError: true,
    handler: (_req, res) => {
      res.status(429).json({
        error: 'rate_limit_exceeded',
        error_description: `Too many requests; retry after ${res.getHeader('Retry-After') ?? 60} seconds.`,
      });
    },
  });

  const byAddress = (req: Request) => ipKeyGenerator(req.ip ?? 'unknown');
  const failedAuthStore = store('failed-auth') ?? new MemoryStore();

  // The client id sits in the form body (public clients, client_secret_post) or in Basic auth. The body
  // is read into a Buffer here, and oidc-provider parses that same Buffer instead of the stream.
  const peekForm = express.raw({ type: 'application/x-www-form-urlencoded', limit: '56kb' });

  return {
    register: rateLimit({ ...common('register', LIMITS.register.perMinute), keyGenerator: byAddress }),
    tokenEndpoint: (name) => [
      peekForm,
      rateLimit({
        ...common(name, LIMITS.token.perMinute),
        keyGenerator: (req) => `${byAddress(req)}|${clientIdOf(req)}`,
      }),
    ],
    failedAuth: countOnlyFailures(failedAuthStore, byAddress, LIMITS.failedAuth.perMinute, ctx),
    async close() {
      await failedAuthStore.shutdown?.();
      await redis?.quit().catch(() => redis.disconnect());
    },
  };
}

/** The client identifier of a token-endpoint request, from Basic auth or the form; '' when absent. */
export function clientIdOf(req: Request): string {
  const auth = req.headers.authorization;
  if (auth?.toLowerCase().startsWith('basic ')) {
    const decoded = Buffer.from(auth.slice(6).trim(), 'base64').toString('utf8');
    const id = decoded.split(':')[0] ?? '';
    try {
      return decodeURIComponent(id.replace(/\+/g, ' '));
    } catch {
      return id;
    }
  }
  if (Buffer.isBuffer(req.body)) return new URLSearchParams(req.body.toString('utf8')).get('client_id') ?? '';
  return '';
}

/**
 * Only failures count: a request is checked against the address's budget when it arrives (without
 * counting it), and counted when its answer is a 401. express-rate-limit counts every request on arrival
 * and takes successes back when they finish, so more than `limit` valid requests in flight at once from
 * one address (every user behind a proxy without TRUST_PROXY) were refused; it cannot count afterwards,
 * hence this small middleware on the same store.
 */
function countOnlyFailures(
  store: Store,
  keyOf: (req: Request) => string,
  limit: number,
  ctx: ServiceContext,
): RequestHandler {
  // A Redis outage must not take the API down: the request goes through and the error is logged.
  const storeError = (error: unknown) =>
    ctx.logger.warn({ err: error }, 'failed-authentication limiter store error');
  const ready = Promise.resolve(store.init?.({ windowMs: WINDOW_MS } as Options)).catch(storeError);
  return (req, res, next) => {
    const key = keyOf(req);
    ready
      .then(() => store.get?.(key))
      .then(
        (info) => {
          if (info && info.totalHits >= limit) {
            const resetInMs = info.resetTime ? info.resetTime.getTime() - Date.now() : WINDOW_MS;
            const retryAfter = Math.max(1, Math.ceil(resetInMs / 1000));
            // The API and MCP doors speak problem+json, not OAuth error bodies.
            return sendProblem(
              res,
              problems.tooManyRequests(
                `Too many failed authentications from this address; retry after ${retryAfter} seconds.`,
                retryAfter,
              ),
            );
          }
          res.once('finish', () => {
            if (res.statusCode === 401) Promise.resolve(store.increment(key)).catch(storeError);
          });
          next();
        },
        (error) => {
          storeError(error);
          next();
        },
      );
  };
}
