// A write that waits on the network (an organization's issuer checked when it is set, a domain's TXT record
// looked up when it is verified) waits before its transaction opens (Preflights in src/api/pipeline.ts).
// Inside it, each such request held a connection of the pool for as long as the other side took: a dozen
// requests setting an issuer that answers slowly, which anyone who can create an organization can do, held
// the whole pool (10), and every other request of the instance waited for a connection and answered 503.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { uniqueHandle } from '../oauth/helpers.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { useService } from '../support/suite.ts';

const service = useService();
const ISSUER_DELAY_MS = 6_000;
let slowIssuer: Server;
let slowUrl: string;
let received = 0;
let admin: TestUser;
const org = uniqueHandle('sloworg');

beforeAll(async () => {
  // An issuer (on loopback, which outside production is allowed) that takes its time to say it has no
  // discovery document.
  slowIssuer = createServer((_req, res) => {
    received++;
    setTimeout(() => res.writeHead(404).end(), ISSUER_DELAY_MS);
  });
  slowIssuer.listen(0, '127.0.0.1');
  await once(slowIssuer, 'listening');
  slowUrl = `http://127.0.0.1:${(slowIssuer.address() as AddressInfo).port}`;
  admin = await createTestUser(service, uniqueHandle('slowadm'));
  await createTestOrganization(service, org, admin);
});
afterAll(() => {
  slowIssuer?.closeAllConnections();
  slowIssuer?.close();
});

describe('writes that wait on the network', () => {
  it('hold no connection of the pool while they wait: the instance goes on answering', {
    timeout: 30_000,
  }, async () => {
    const setting = Array.from({ length: 12 }, () =>
      sdk.setIdentityProvider({
        client: admin.client,
        path: { org },
        body: { issuer: slowUrl, clientId: 'client', clientSecret: 'secret', enrollRole: 'member' },
      }),
    );
    // All twelve are waiting on the issuer now, more than the pool has connections.
    await expect.poll(() => received, { timeout: ISSUER_DELAY_MS / 2, interval: 20 }).toBe(12);
    // Meanwhile another write and a read of the same person are answered as ever (they waited for a
    // connection until the pool's bound, and answered 503).
    const project = await sdk.createProject({
      client: admin.client,
      path: { account: admin.handle },
      body: { handle: 'meanwhile', name: 'Meanwhile', sourceLocale: 'en' },
    });
    expect(project.response.status).toBe(201);
    expect((await sdk.getOrganization({ client: admin.client, path: { org } })).response.status).toBe(200);
    // A request that cannot be saved whatever the issuer says (no client secret, none stored) is refused
    // without fetching it: at once, not after the issuer's wait.
    const before = received;
    const noSecret = await sdk.setIdentityProvider({
      client: admin.client,
      path: { org },
      body: { issuer: slowUrl, clientId: 'client', enrollRole: 'member' },
    });
    expect(noSecret.response.status).toBe(400);
    expect(noSecret.error?.errors?.[0]?.pointer).toBe('/body/clientSecret');
    expect(received).toBe(before);
    // And each of the twelve gets its own answer: the issuer has no discovery document.
    const answers = await Promise.all(setting);
    for (const answer of answers) {
      expect(answer.response.status).toBe(400);
      expect(answer.error?.errors?.[0]?.pointer).toBe('/body/issuer');
    }
  });
});
