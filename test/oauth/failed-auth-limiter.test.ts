// The failed-bearer-authentication limiter the API and MCP routers put in front of their routes: only
// 401 answers count, per client address; over the limit, 429 with Retry-After. With Redis, on every
// instance, and without asking Redis about addresses that have not failed.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import type { ServiceContext } from '../../src/context.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createMetrics } from '../../src/lib/metrics.ts';
import { createRateLimits, type RateLimits } from '../../src/oauth/rate-limits.ts';
import { freePort } from '../support/ports.ts';
import { hasRedisServer, type OwnedRedis, startRedisServer } from '../support/redis-server.ts';
import { sharedSecretsEnv } from '../support/service.ts';
import { randomAddress } from './helpers.ts';

/** An express app with the limiter in front of its routes, listening on a loopback port. */
async function limitedProbe(limits: RateLimits) {
  const app = express();
  app.set('trust proxy', true); // lets a test speak from its own address (X-Forwarded-For)
  app.use(limits.failedAuth);
  // Stands in for the pipeline: a good token passes, anything else is a 401.
  app.get('/probe', (req, res) => {
    res.status(req.headers.authorization === 'Bearer good' ? 200 : 401).end();
  });
  const listening = app.listen(0, '127.0.0.1');
  await once(listening, 'listening');
  const probeUrl = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/probe`;
  return {
    app,
    url: probeUrl,
    probe: (token: string, address: string) =>
      fetch(probeUrl, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } }),
    close: () => listening.close(),
  };
}

const metrics = createMetrics({ poolStats: async () => undefined });
let limits: RateLimits;
let probeServer: Awaited<ReturnType<typeof limitedProbe>>;
let arrived: (() => void) | undefined;
let closed: (() => void) | undefined;

const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://unused/x', ...sharedSecretsEnv });

/** The limiter as createRateLimits builds it for the service, on this config. */
const rateLimitsFor = (settings: typeof config) =>
  createRateLimits({ config: settings, logger: createLogger(settings), metrics } as ServiceContext);

beforeAll(async () => {
  limits = rateLimitsFor(config);
  probeServer = await limitedProbe(limits);
  // A call the client gives up on before any answer: tells the test it arrived, then never answers.
  probeServer.app.get('/hang', (_req, res) => {
    arrived?.();
    res.once('close', () => closed?.());
  });
});
afterAll(async () => {
  probeServer?.close();
  await limits?.close();
});

describe('failed authentication limiter', () => {
  it('does not count calls the client abandons before an answer', async () => {
    const headers = { authorization: 'Bearer bad', 'x-forwarded-for': '198.51.100.7' };
    for (let i = 0; i < config.rateLimits.failedAuthPerMinute + 5; i++) {
      const controller = new AbortController();
      const reached = new Promise<void>((resolve) => {
        arrived = resolve;
      });
      const gone = new Promise<void>((resolve) => {
        closed = resolve;
      });
      const call = fetch(probeServer.url.replace('/probe', '/hang'), {
        headers,
        signal: controller.signal,
      }).catch(() => 'aborted');
      await reached;
      controller.abort();
      expect(await call).toBe('aborted');
      await gone;
    }
    const answered = await fetch(probeServer.url, { headers });
    expect(answered.status).toBe(401);
  });

  it('counts only 401s and answers 429 once an address has too many', async () => {
    const probe = (token: string) =>
      fetch(probeServer.url, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 5; i++) expect((await probe('good')).status).toBe(200);
    for (let i = 0; i < config.rateLimits.failedAuthPerMinute; i++)
      expect((await probe('bad')).status).toBe(401);
    const limited = await probe('bad');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await probe('good')).status).toBe(429);
    // Each turned-away request is counted under its limiter.
    const counted = (await metrics.scrape()).body;
    expect(counted).toContain('rate_limit_rejections_total{limiter="failed-auth"} 2');
  });

  it('does not count the challenge to a request without credentials, which is how clients discover OAuth', async () => {
    const address = randomAddress();
    const bare = () => fetch(probeServer.url, { headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < config.rateLimits.failedAuthPerMinute + 5; i++)
      expect((await bare()).status).toBe(401);
    expect((await probeServer.probe('good', address)).status).toBe(200);
  });
});

/** How long to poll for something that happens after an answer was sent (a count, a block on another instance). */
const AFTER_ANSWER = { timeout: 5_000, interval: 20 };

describe.skipIf(!hasRedisServer)('failed authentication limiter on instances sharing Redis', () => {
  let redis: OwnedRedis;
  let admin: Redis;
  let monitor: Redis;
  let redisConfig: ReturnType<typeof loadConfig>;
  const instances: { limits: RateLimits; server: Awaited<ReturnType<typeof limitedProbe>> }[] = [];
  /** Every command a client sent Redis (not those its scripts ran), as its arguments. */
  const commands: string[][] = [];

  const startInstance = async () => {
    const limits = rateLimitsFor(redisConfig);
    const instance = { limits, server: await limitedProbe(limits) };
    instances.push(instance);
    // Connected, and listening for blocks (each instance subscribes once its connection is up).
    await expect.poll(() => limits.redisStatus(), AFTER_ANSWER).toBe('ok');
    await expect.poll(subscribers, AFTER_ANSWER).toBe(instances.length);
    return instance.server.probe;
  };
  const subscribers = async () =>
    Number(((await admin.call('pubsub', 'numsub', 'l10n:rl:failed-auth:blocked')) as [string, number])[1]);

  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
    redisConfig = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: 'postgres://unused/x',
      REDIS_URL: redis.url,
      ...sharedSecretsEnv,
    });
    admin = new Redis(redis.url);
    // Ready first: its ready check (INFO) could otherwise reach Redis just after MONITOR, and its feed line
    // arrive with MONITOR's OK, before ioredis counts the connection as monitoring ("Command queue state
    // error", seen under a loaded suite).
    await admin.ping();
    monitor = await admin.monitor(); // a connection of its own, in monitor mode
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') commands.push(args);
    });
  });
  afterAll(async () => {
    for (const { limits, server } of instances) {
      server.close();
      await limits.close();
    }
    monitor?.disconnect();
    admin?.disconnect();
    await redis?.kill();
  });

  it('asks Redis nothing about an address until a request from it fails', async () => {
    const probe = await startInstance();
    const address = randomAddress();
    const aboutAddress = () => commands.filter((args) => args.some((arg) => arg.includes(address)));
    for (let i = 0; i < 5; i++) expect((await probe('good', address)).status).toBe(200);
    expect((await probe('bad', address)).status).toBe(401);
    // The failure is counted after its answer; once its command shows, every earlier one has.
    await expect.poll(() => aboutAddress().length, AFTER_ANSWER).toBeGreaterThan(0);
    expect(aboutAddress()).toHaveLength(1);
    expect(aboutAddress()[0]![0]!.toLowerCase()).toBe('evalsha');
  });

  it('stops on every instance an address that failed too often on one', async () => {
    const [a, b] = [await startInstance(), await startInstance()];
    const address = randomAddress();
    for (let i = 0; i < redisConfig.rateLimits.failedAuthPerMinute; i++)
      expect((await a('bad', address)).status).toBe(401);
    // Valid requests never count, so only the announced block can stop them on b.
    await expect.poll(async () => (await b('good', address)).status, AFTER_ANSWER).toBe(429);
    const refused = await b('good', address);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await a('good', address)).status).toBe(429);
    expect((await b('good', randomAddress())).status).toBe(200);

    // An instance that was not listening when the address was stopped learns it from its first failure.
    const late = await startInstance();
    expect((await late('bad', address)).status).toBe(401);
    await expect.poll(async () => (await late('good', address)).status, AFTER_ANSWER).toBe(429);
  });

  it('ignores anything on the channel that is not a block', async () => {
    const probe = await startInstance();
    const address = randomAddress();
    for (const message of [
      '{not json',
      JSON.stringify({ key: address, forMs: 'soon' }),
      JSON.stringify({ key: address, forMs: -5 }),
      'null',
    ])
      await admin.publish('l10n:rl:failed-auth:blocked', message);
    // A real block published after them is applied, so the ones before were read (and ignored).
    const other = randomAddress();
    await admin.publish('l10n:rl:failed-auth:blocked', JSON.stringify({ key: other, forMs: 30_000 }));
    await expect.poll(async () => (await probe('good', other)).status, AFTER_ANSWER).toBe(429);
    expect((await probe('good', address)).status).toBe(200);
  });
});
