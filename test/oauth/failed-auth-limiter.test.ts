// The failed-bearer-authentication limiter the API and MCP routers put in front of their routes: only
// 401 answers count, per client address; over the limit, 429 with Retry-After.
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import type { ServiceContext } from '../../src/context.ts';
import { createLogger } from '../../src/lib/logger.ts';
import { createMetrics } from '../../src/lib/metrics.ts';
import { createRateLimits, type RateLimits } from '../../src/oauth/rate-limits.ts';
import { sharedSecretsEnv } from '../support/service.ts';

let limits: RateLimits;
const metrics = createMetrics({ poolStats: async () => undefined });
let server: ReturnType<express.Express['listen']>;
let url: string;
let arrived: (() => void) | undefined;
let closed: (() => void) | undefined;

const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://unused/x', ...sharedSecretsEnv });

beforeAll(async () => {
  const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://unused/x', ...sharedSecretsEnv });
  limits = createRateLimits({ config, logger: createLogger(config), metrics } as ServiceContext);
  const app = express();
  app.set('trust proxy', true); // lets a test speak from its own address (X-Forwarded-For)
  app.use(limits.failedAuth);
  // A call the client gives up on before any answer: tells the test it arrived, then never answers.
  app.get('/hang', (_req, res) => {
    arrived?.();
    res.once('close', () => closed?.());
  });
  // Stands in for the pipeline: a good token passes, anything else is a 401.
  app.get('/probe', (req, res) => {
    res.status(req.headers.authorization === 'Bearer good' ? 200 : 401).end();
  });
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/probe`;
});
afterAll(async () => {
  server?.close();
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
      const call = fetch(url.replace('/probe', '/hang'), { headers, signal: controller.signal }).catch(
        () => 'aborted',
      );
      await reached;
      controller.abort();
      expect(await call).toBe('aborted');
      await gone;
    }
    const answered = await fetch(url, { headers });
    expect(answered.status).toBe(401);
  });

  it('counts only 401s and answers 429 once an address has too many', async () => {
    const probe = (token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } });
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
});
