// Spec section 8: request limits on the OAuth endpoints, plus a limit on failed bearer authentications
// for the API and MCP pipelines. Counters live in Redis when REDIS_URL is set, so every instance counts
// against the same budget; in memory otherwise (one instance). When Redis is unreachable the limits are
// not enforced (requests are served, never refused for it), the outage is logged once when it starts and
// once when it ends, and counting resumes by itself when Redis is back. The budgets are
// settings (config.rateLimits).
import express, { type Request, type RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, type Options, rateLimit, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import type { RedisStore } from 'rate-limit-redis';
import { problems, sendProblem } from '../api/problem.ts';
import type { ServiceContext } from '../context.ts';
import { onFirstUse } from '../lib/on-first-use.ts';

// Loaded only when REDIS_URL is set.
const ioredis = onFirstUse<typeof import('ioredis')>('ioredis');
const rateLimitRedis = onFirstUse<typeof import('rate-limit-redis')>('rate-limit-redis');

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
  /** For /readyz: whether the shared counters are reachable; undefined without REDIS_URL. */
  redisStatus(): Promise<'ok' | 'unreachable' | undefined>;
  close(): Promise<void>;
}

export function createRateLimits(ctx: ServiceContext): RateLimits {
  const redis: Redis | undefined = ctx.config.redisUrl
    ? new (ioredis().Redis)(ctx.config.redisUrl, {
        maxRetriesPerRequest: 1,
        enableAutoPipelining: true,
        // While Redis is away a limiter's command fails at once (and the request goes through) instead of
        // waiting in a queue for a reconnection that may take long.
        enableOfflineQueue: false,
        connectTimeout: 2_000,
      })
    : undefined;
  const outage = outageLog(ctx.logger);
  redis?.on('error', (error) => outage.down(error));
  redis?.on('ready', () => outage.up());
  const logger: Options['logger'] = {
    error: (error, message) => {
      if (message?.includes('error from store')) outage.down(error);
      // Redis is rarely connected yet when the limiters are built; their stores load what they need later.
      else if (message?.includes('store initialization')) ctx.logger.debug({ err: error }, message);
      else ctx.logger.error({ err: error }, message);
    },
    warn: (error, message) => ctx.logger.warn({ err: error }, message),
  };

  // express-rate-limit needs one store per limiter; all Redis stores share the one connection.
  const RedisStoreClass = redis && recoveringRedisStore(rateLimitRedis().RedisStore);
  const store = (name: string): Store | undefined =>
    RedisStoreClass && redis
      ? new RedisStoreClass({
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
    // A Redis outage must not take sign-in down: the request goes through (the outage is logged once).
    passOnStoreError: true,
    logger,
    handler: (_req, res) => {
      ctx.metrics.rateLimited(name);
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
    failedAuth: countOnlyFailures(failedAuthStore, byAddress, limits.failedAuthPerMinute, ctx),
    async redisStatus() {
      if (!redis) return undefined;
      // Just after start, or while reconnecting, the connection gets up to a second to be ready.
      let onReady: (() => void) | undefined;
      let timer: NodeJS.Timeout | undefined;
      const connected = new Promise<boolean>((resolve) => {
        if (redis.status === 'ready') return resolve(true);
        onReady = () => resolve(true);
        redis.once('ready', onReady);
        timer = setTimeout(() => resolve(false), 1_000);
      });
      const ready = await connected;
      clearTimeout(timer);
      if (onReady) redis.off('ready', onReady);
      if (!ready) return 'unreachable';
      return redis.ping().then(
        () => 'ok' as const,
        () => 'unreachable' as const,
      );
    },
    async close() {
      await failedAuthStore.shutdown?.();
      await redis?.quit().catch(() => redis.disconnect());
    },
  };
}

/** The client identifier of a token-endpoint request, from Basic auth or the form; '' when absent. */
function clientIdOf(req: Request): string {
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
            ctx.metrics.rateLimited('failed-auth');
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

/**
 * rate-limit-redis loads its Lua scripts once, when the limiter is created; if Redis is unreachable then,
 * the failed load would fail every later call even after Redis is back. This reloads a script after any
 * failure and tries once more, so counting resumes without a restart. Made when Redis is configured, from
 * the class it extends, which is loaded then.
 */
function recoveringRedisStore(Base: typeof RedisStore) {
  return class RecoveringRedisStore extends Base {
    override async increment(key: string) {
      try {
        return await super.increment(key);
      } catch {
        this.incrementScriptSha = this.loadIncrementScript();
        return super.increment(key);
      }
    }

    override async get(key: string) {
      try {
        return await super.get(key);
      } catch {
        this.getScriptSha = this.loadGetScript();
        return super.get(key);
      }
    }
  };
}

/** Logs a Redis outage once when it starts and once when it ends, however many requests meet it. */
function outageLog(logger: ServiceContext['logger']) {
  let down = false;
  return {
    down(error: unknown) {
      if (down) return;
      down = true;
      logger.error(
        { err: error },
        'rate-limit Redis unreachable: rate limits are not enforced until it is back',
      );
    },
    up() {
      if (!down) return;
      down = false;
      logger.info('rate-limit Redis is back: rate limits are enforced again');
    },
  };
}
