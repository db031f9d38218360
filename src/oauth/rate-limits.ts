// Spec section 8: request limits on the OAuth endpoints, plus a limit on failed bearer authentications
// for the API and MCP pipelines. Counters live in Redis when REDIS_URL is set, so every instance counts
// against the same budget; in memory otherwise (one instance). When Redis is unreachable the limits are
// not enforced (requests are served, never refused for it; only an address the failed-authentication
// limiter had already stopped stays stopped until its minute ends), the outage is logged once when it
// starts and once when it ends, and counting resumes by itself when Redis is back. The budgets are
// settings (config.rateLimits).
import express, { type Request, type RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, type Options, rateLimit, type Store } from 'express-rate-limit';
import type { Redis } from 'ioredis';
import type { RedisStore } from 'rate-limit-redis';
import type { ServiceContext } from '../context.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import { requireUtf8Form } from '../lib/utf8-body.ts';
import { createFailedAuthLimiter } from './failed-auth-limiter.ts';

// Loaded only when REDIS_URL is set.
const ioredis = onFirstUse<typeof import('ioredis')>('ioredis');
const rateLimitRedis = onFirstUse<typeof import('rate-limit-redis')>('rate-limit-redis');

const WINDOW_MS = 60_000;
/** How long a Redis command may go unanswered before it counts as an outage (the request goes through). */
const REDIS_COMMAND_TIMEOUT_MS = 500;
const KEY_PREFIX = 'l10n:rl:';
/** Where an instance announces an address it stopped for failed authentications (failed-auth-limiter.ts). */
const BLOCKS_CHANNEL = `${KEY_PREFIX}failed-auth:blocked`;

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
        // A Redis that stops answering without closing the connection (frozen, partitioned) is met by
        // this bound instead: a command fails after it, as in an outage, and the request goes through.
        // A limiter whose command goes unanswered reloads its script and tries once more
        // (RecoveringRedisStore), so the first request to meet a frozen Redis waits up to three bounds per
        // limiter; later ones about one (measured: 1.9 s, then 0.5 s, for a token request).
        commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
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
          // A Redis that froze and answers again never closed its connection, so no 'ready' follows
          // the outage: the first command that succeeds again is the recovery.
          sendCommand: (command: string, ...args: string[]) =>
            (redis.call(command, ...args) as Promise<number>).then((result) => {
              outage.up();
              return result;
            }),
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
  const failedAuth = createFailedAuthLimiter({
    store: failedAuthStore,
    keyOf: byAddress,
    limit: limits.failedAuthPerMinute,
    windowMs: WINDOW_MS,
    channel: redis && { publish: (message) => redis.publish(BLOCKS_CHANNEL, message) },
    onRefused: () => ctx.metrics.rateLimited('failed-auth'),
    // Met only by this limiter (an instance serving the API and MCP alone), an outage is still the one
    // outage line, and the store's next success the recovery (sendCommand above).
    onStoreError: (error) => outage.down(error),
    // As for the other limiters' stores (logger, above): at start Redis is rarely connected yet, and the
    // store loads its script on first use, so this is no outage.
    onStoreInitError: (error) =>
      ctx.logger.debug({ err: error }, 'failed-authentication limiter store initialization'),
  });
  // Its own connection: a Redis connection that subscribes can send nothing else. It subscribes again at
  // every (re)connection, including one after an outage at start.
  const blocks = redis?.duplicate({ autoResubscribe: false });
  // An outage is logged by the main connection (outageLog), which meets it too.
  const subscriptionError = (error: unknown) =>
    ctx.logger.debug({ err: error }, 'failed-authentication block subscription error');
  blocks?.on('ready', () => {
    blocks.subscribe(BLOCKS_CHANNEL).catch(subscriptionError);
  });
  blocks?.on('error', subscriptionError);
  blocks?.on('message', (channel: string, message: string) => {
    if (channel === BLOCKS_CHANNEL) failedAuth.receive(message);
  });

  // The client id sits in the form body (public clients, client_secret_post) or in Basic auth. The body
  // is read into a Buffer here, and oidc-provider parses that same Buffer instead of the stream.
  const peekForm = express.raw({
    type: 'application/x-www-form-urlencoded',
    limit: '56kb',
    verify: requireUtf8Form,
  });

  return {
    register: rateLimit({ ...common('register', limits.registerPerMinute), keyGenerator: byAddress }),
    tokenEndpoint: (name) => [
      peekForm,
      rateLimit({
        ...common(name, limits.tokenPerMinute),
        keyGenerator: (req) => `${byAddress(req)}|${clientIdOf(req)}`,
      }),
    ],
    failedAuth: failedAuth.middleware,
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
      // Bounded by commandTimeout: a Redis that stopped answering is 'unreachable' after it.
      return redis.ping().then(
        () => 'ok' as const,
        () => 'unreachable' as const,
      );
    },
    async close() {
      await failedAuthStore.shutdown?.();
      await blocks?.quit().catch(() => blocks.disconnect());
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
