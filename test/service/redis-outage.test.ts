import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { randomAddress, registerSixTimes, startOAuthService } from '../oauth/helpers.ts';
import { canConnect, freePort } from '../support/ports.ts';
import { hasRedisServer, type OwnedRedis, startRedisServer } from '../support/redis-server.ts';
import type { TestService } from '../support/service.ts';

// The rate-limit counters live in a Redis this test owns; it kills Redis mid-run and brings it back.
describe.skipIf(!hasRedisServer)('when the rate-limit Redis goes away', () => {
  const lines: { level: number; msg: string }[] = [];
  let redis: OwnedRedis;
  let service: TestService;

  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
    service = await serviceLoggingTo(lines, redis.url);
  });
  afterAll(async () => {
    await service?.close();
    await redis?.kill();
  });

  const registerSixFrom = (address: string) => registerSixTimes(address, service);
  const readiness = async () => {
    const response = await fetch(`${service.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };
  const outageLines = () => lines.filter((l) => /rate-limit Redis unreachable/.test(l.msg));
  const recoveryLines = () => lines.filter((l) => /rate-limit Redis is back/.test(l.msg));

  it('reports Redis in /readyz and enforces the limits through it', async () => {
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok', redis: 'ok' } });
    expect(await registerSixFrom(randomAddress())).toEqual([201, 201, 201, 201, 201, 429]);
    // A start with Redis up says nothing alarming: the stores built before the connection was ready load
    // what they need later, which is no outage (a warning here looked like one and could page someone).
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  });

  it('keeps serving without limits, stays ready (degraded), and logs the outage once', async () => {
    await redis.kill();
    expect(await readiness()).toEqual({
      status: 200,
      body: { status: 'degraded', database: 'ok', redis: 'unreachable' },
    });
    // Twelve requests that each meet the outage: all served, none turned away.
    const from = randomAddress();
    expect([...(await registerSixFrom(from)), ...(await registerSixFrom(from))]).toEqual(Array(12).fill(201));
    expect(outageLines()).toHaveLength(1);
    expect(outageLines()[0]!.level).toBe(50); // error
  });

  it('keeps answering readiness while Redis is away, with no further error lines', async () => {
    for (let i = 0; i < 3; i++) expect((await readiness()).body.redis).toBe('unreachable');
    expect(lines.filter((l) => l.level >= 50 && !/rate-limit Redis unreachable/.test(l.msg))).toEqual([]);
  });

  it('counts again once Redis is back, without a restart, and logs the recovery once', async () => {
    await redis.restart();
    // ioredis reconnects on its own; wait for it (bounded), then the limits hold again.
    await expect
      .poll(async () => (await readiness()).body.redis, { timeout: 10_000, interval: 100 })
      .toBe('ok');
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok', redis: 'ok' } });
    expect(await registerSixFrom(randomAddress())).toEqual([201, 201, 201, 201, 201, 429]);
    expect(recoveryLines()).toHaveLength(1);
    expect(outageLines()).toHaveLength(1);
  });
});

/** A Redis of the test's own that can be frozen (SIGSTOP) and resumed, as on a network partition. */
async function freezableRedis() {
  const port = await freePort();
  const redis = spawn(
    '/usr/bin/redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', ''],
    {
      stdio: 'ignore',
    },
  );
  while (!(await canConnect(port))) await new Promise((resolve) => setTimeout(resolve, 50));
  let frozen = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    freeze: () => {
      frozen = redis.kill('SIGSTOP');
    },
    resume: () => {
      if (frozen) redis.kill('SIGCONT');
      frozen = false;
    },
    kill: () => redis.kill('SIGKILL'),
  };
}

/** A service whose log lines the test reads, its rate-limit counters in `redisUrl`. */
async function serviceLoggingTo(lines: { level: number; msg: string }[], redisUrl: string) {
  const logger = createLogger(
    { logLevel: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line)) },
  );
  return startOAuthService({ REDIS_URL: redisUrl }, { logger });
}

// A Redis that stops answering without closing the connection (frozen with SIGSTOP, as on a network
// partition): the rate-limit checks give up after their command bound and let the request through, and
// /readyz reports it. A hang fails by the test timeout (no timed assertions).
describe.skipIf(!hasRedisServer)('when the rate-limit Redis stops answering', () => {
  const lines: { level: number; msg: string }[] = [];
  let redis: Awaited<ReturnType<typeof freezableRedis>>;
  let service: TestService;
  const freeze = () => redis.freeze();
  const resume = () => redis?.resume();

  beforeAll(async () => {
    redis = await freezableRedis();
    service = await serviceLoggingTo(lines, redis.url);
  });
  afterAll(async () => {
    resume(); // never leave it stopped
    await service?.close();
    redis?.kill();
  });

  const readiness = async () => {
    const response = await fetch(`${service.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };

  it('serves the OAuth endpoints and reports degraded readiness while frozen', {
    timeout: 10_000,
  }, async () => {
    expect(await readiness()).toEqual({ status: 200, body: { status: 'ok', database: 'ok', redis: 'ok' } });
    freeze();
    try {
      expect(await readiness()).toEqual({
        status: 200,
        body: { status: 'degraded', database: 'ok', redis: 'unreachable' },
      });
      const token = await fetch(`${service.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': randomAddress() },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: 'x'.repeat(43),
          client_id: 'x',
        }),
      });
      expect(token.status).not.toBe(429);
      expect(token.status).toBeLessThan(500);
      expect(await registerSixTimes(randomAddress(), service)).toEqual(Array(6).fill(201));
    } finally {
      resume();
    }
  });

  it('counts again once Redis answers', { timeout: 10_000 }, async () => {
    await expect
      .poll(async () => (await readiness()).body.redis, { timeout: 5_000, interval: 100 })
      .toBe('ok');
    expect(await registerSixTimes(randomAddress(), service)).toEqual([201, 201, 201, 201, 201, 429]);
    // The connection never closed, so the recovery is told by the first command that succeeded again.
    expect(lines.filter((l) => /rate-limit Redis unreachable/.test(l.msg))).toHaveLength(1);
    expect(lines.filter((l) => /rate-limit Redis is back/.test(l.msg))).toHaveLength(1);
  });
});

// An instance that meets a frozen Redis only through the failed-authentication limiter (it serves the API
// and MCP alone, behind a load balancer that sends OAuth elsewhere) logs the outage and the recovery too:
// its errors were warnings of their own, and the line operators alert on never came.
describe.skipIf(!hasRedisServer)('when only failed bearer tokens meet a frozen Redis', () => {
  const lines: { level: number; msg: string }[] = [];
  let redis: Awaited<ReturnType<typeof freezableRedis>>;
  let service: TestService;

  beforeAll(async () => {
    redis = await freezableRedis();
    service = await serviceLoggingTo(lines, redis.url);
  });
  afterAll(async () => {
    redis?.resume();
    await service?.close();
    redis?.kill();
  });

  const failBearer = async () => {
    const response = await fetch(`${service.url}/api/v1/accounts`, {
      headers: { authorization: 'Bearer l10n_not-a-token', 'x-forwarded-for': randomAddress() },
    });
    expect(response.status).toBe(401);
  };

  it('logs the outage once and the recovery once', { timeout: 15_000 }, async () => {
    await failBearer(); // the limiter's store is loaded and counting
    const outageLines = () => lines.filter((l) => /rate-limit Redis unreachable/.test(l.msg)).length;
    redis.freeze();
    try {
      // A failure is counted after its answer, so the outage is met (the command bound) a moment later.
      await expect
        .poll(
          async () => {
            await failBearer();
            return outageLines();
          },
          { timeout: 10_000, interval: 200 },
        )
        .toBe(1);
    } finally {
      redis.resume();
    }
    await expect
      .poll(
        async () => {
          await failBearer();
          return lines.filter((l) => /rate-limit Redis is back/.test(l.msg)).length;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBe(1);
    expect(outageLines()).toBe(1);
    expect(lines.filter((l) => /failed-authentication limiter store error/.test(l.msg))).toEqual([]);
  });
});

// A Redis that refuses the credentials of REDIS_URL (a wrong password, or one changed under a running
// fleet): ioredis's error carries the command it sent, `HELLO 3 AUTH <user> <password>`, and the outage
// line logged that error whole, password included.
describe.skipIf(!hasRedisServer)('when the rate-limit Redis refuses the credentials', () => {
  const written: string[] = [];
  let redis: OwnedRedis;
  let service: TestService;

  beforeAll(async () => {
    redis = await startRedisServer(await freePort());
    const logger = createLogger({ logLevel: 'debug' }, { write: (line: string) => void written.push(line) });
    const url = new URL(redis.url);
    url.username = 'operator';
    url.password = 'Refused-Pw-7731';
    service = await startOAuthService({ REDIS_URL: url.href }, { logger });
  });
  afterAll(async () => {
    await service?.close();
    await redis?.kill();
  });

  it('logs the outage without the password', async () => {
    // Still served (limits off), and the refusal is logged as an outage...
    expect(await registerSixTimes(randomAddress(), service)).toEqual(Array(6).fill(201));
    await expect
      .poll(() => written.filter((line) => line.includes('rate-limit Redis unreachable')).length)
      .toBe(1);
    const outage = JSON.parse(written.find((line) => line.includes('rate-limit Redis unreachable'))!);
    expect(outage.err.message).toMatch(/WRONGPASS/);
    // ...whose error still names the command, but not what it carried.
    expect(outage.err.command).toEqual({ name: 'hello', args: '[redacted]' });
    expect(written.join('\n')).not.toContain('Refused-Pw-7731');
  });
});
