// Spec section 8: 5/min on registration per address; 30/min on token, revoke and introspect per address
// and client id; 429 with Retry-After and RateLimit headers; one budget across instances through Redis.
// Every test speaks from its own random address (X-Forwarded-For behind the trusted proxy), so tests and
// repeated runs never share a counter, and no test waits for a window to pass.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasRedis, REDIS_URL } from '../support/environment.ts';
import type { TestService } from '../support/service.ts';
import { randomAddress, register, startOAuthService } from './helpers.ts';

const metadata = {
  client_name: 'RL',
  redirect_uris: ['http://127.0.0.1:9/cb'],
  token_endpoint_auth_method: 'none',
};

async function expectLimited(response: Response) {
  expect(response.status).toBe(429);
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(response.headers.get('ratelimit')).toMatch(/r=0/);
  expect(response.headers.get('ratelimit-policy')).toBeTruthy();
  expect(((await response.json()) as { error: string }).error).toBe('rate_limit_exceeded');
}

function post(
  service: TestService,
  path: string,
  address: string,
  fields: Record<string, string>,
  auth?: string,
) {
  return fetch(`${service.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': address,
      ...(auth ? { authorization: auth } : {}),
    },
    body: new URLSearchParams(fields).toString(),
  });
}

describe('rate limits on one instance (memory store)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startOAuthService();
  });
  afterAll(async () => {
    await service?.close();
  });

  it('allows 5 registrations a minute per address, then answers 429', async () => {
    const address = randomAddress();
    for (let i = 0; i < service.config.rateLimits.registerPerMinute; i++) {
      expect((await register(service, metadata, address)).status).toBe(201);
    }
    await expectLimited(await register(service, metadata, address));
    // Another address has its own budget.
    expect((await register(service, metadata, randomAddress())).status).toBe(201);
  });

  it('allows 30 requests a minute per address and client id on token, revoke and introspect', async () => {
    const address = randomAddress();
    for (const path of ['/oauth/token', '/oauth/revoke', '/oauth/introspect']) {
      const fields = { client_id: 'client-a', grant_type: 'refresh_token', refresh_token: 'x', token: 'x' };
      for (let i = 0; i < service.config.rateLimits.tokenPerMinute; i++) {
        const response = await post(service, path, address, fields);
        expect(response.status).not.toBe(429);
      }
      await expectLimited(await post(service, path, address, fields));
      // The same client from Basic auth shares the budget; another client id from the same address does not.
      const basic = `Basic ${Buffer.from('client-a:secret').toString('base64')}`;
      expect((await post(service, path, address, { token: 'x' }, basic)).status).toBe(429);
      expect((await post(service, path, address, { ...fields, client_id: 'client-b' })).status).not.toBe(429);
    }
  });
});

describe('rate limits as settings', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startOAuthService({
      RATE_LIMIT_REGISTER_PER_MINUTE: '2',
      RATE_LIMIT_TOKEN_PER_MINUTE: '3',
    });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('applies the configured budgets instead of the defaults', async () => {
    const address = randomAddress();
    for (let i = 0; i < 2; i++) expect((await register(service, metadata, address)).status).toBe(201);
    await expectLimited(await register(service, metadata, address));
    const fields = { client_id: 'client-a', grant_type: 'refresh_token', refresh_token: 'x' };
    for (let i = 0; i < 3; i++) {
      expect((await post(service, '/oauth/token', address, fields)).status).not.toBe(429);
    }
    await expectLimited(await post(service, '/oauth/token', address, fields));
  });
});

describe.skipIf(!(await hasRedis()))('rate limits across two instances (Redis store)', () => {
  let first: TestService;
  let second: TestService;
  beforeAll(async () => {
    first = await startOAuthService({ REDIS_URL });
    second = await startOAuthService({ REDIS_URL }, { database: first.database });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
  });

  it('counts registrations from one address against one shared budget', async () => {
    const address = randomAddress();
    const statuses: number[] = [];
    for (let i = 0; i < first.config.rateLimits.registerPerMinute; i++) {
      const instance = i % 2 === 0 ? first : second;
      statuses.push((await register(instance, metadata, address)).status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201]);
    await expectLimited(await register(second, metadata, address));
    await expectLimited(await register(first, metadata, address));
  });
});
