// Spec section 8: request limits on the OAuth endpoints, plus a limit on failed bearer authentications
// for the API and MCP pipelines. Counters live in Redis when REDIS_URL is set, so every instance counts
// against the same budget; in memory otherwise (one instance). The budgets are settings (config.rateLimits).
import express, { type Request, type RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, type Options, rateLimit, type Store } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RedisStore } from 'rate-limit-redis';
import { problems, sendProblem } from '../api/problem.ts';
import type { ServiceContext } from '../app.ts';

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

  const limits = ctx.config.rateLimits;
  const byAddress = (req: Request) => ipKeyGenerator(req.ip ?? 'unknown');
  const failedAuthStore = store('failed-auth') ?? new MemoryStore();

  // The client id sits in the form body (public clients, client_secret_post) or in Basic auth. The body
  // is read into a Buffer here, and oidc-provider parses that same Buffer instead of the stream.
  const peekForm = express.raw({ type: 'application/x-www-form-urlencoded', limit: '56kb' });

  return {
    register: rateLimit({ ...common('register', limits.registerPerMinute), keyGenerator: byAddress }),
    tokenEndpoint: (name) => [
      peekForm,
      rateLimit({
        ...common(name, limits.tokenPerMinute),
        keyGenerator: (req) => `${byAddress(req)}|${clientIdOf(req)}`,
      }),
    ],
    failedAuth: countOnlyFailures(
      failedAuthStore,
      byAddress,
      rateLimit({
        ...common('failed-auth', limits.failedAuthPerMinute),
        store: failedAuthStore,
        keyGenerator: byAddress,
        skipSuccessfulRequests: true,
        requestWasSuccessful: (_req, res) => res.statusCode !== 401,
        // The API and MCP doors speak problem+json, not OAuth error bodies.
        handler: (_req, res) => {
          const retryAfter = Number(res.getHeader('Retry-After') ?? 60);
          sendProblem(
            res,
            problems.tooManyRequests(
              `Too many failed authentications from this address; retry after ${retryAfter} seconds.`,
              retryAfter,
            ),
          );
        },
      }),
    ),
    async close() {
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
 * express-rate-limit's skipSuccessfulRequests takes a hit back only when a response finishes; a request
 * the client abandons (a cancelled call, a benchmark stopping) would stay counted as a failure and lock the
 * address out. An abandoned request is no failed authentication, so its hit is taken back here.
 */
function countOnlyFailures(
  store: Store,
  keyOf: (req: Request) => string,
  limiter: RequestHandler,
): RequestHandler {
  return (req, res, next) => {
    res.once('close', () => {
      if (!res.writableFinished) void store.decrement(keyOf(req));
    });
    limiter(req, res, next);
  };
}
