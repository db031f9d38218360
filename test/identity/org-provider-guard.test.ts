// An organization's identity provider is a URL its admins choose, and our server connects to it: to check
// it when it is set, and at every sign-in, to it and to the endpoints its discovery document names. So those
// requests go through the address guard (src/identity/org-provider-fetch.ts): an issuer at a loopback,
// private or link-local address is refused with a 400 and nothing is stored, a provider whose address is
// refused at sign-in gets the sign-in error page, and no connection is ever made to the refused address.
// ORG_IDP_ALLOWED_NETWORKS lets an operator admit a private network. The private network here is this
// machine's own non-loopback address (a container's or a LAN's), where the upstream provider listens.
import { once } from 'node:events';
import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { allowedNetworks, OutboundRefused, vetAddress } from '../../src/lib/address-guard.ts';
import { CookieJar, sql, uniqueHandle } from '../oauth/helpers.ts';
import { startTxtServer, type TxtServer } from '../support/dns-server.ts';
import { createTestOrganization, createTestUser, sdkClient, type TestUser } from '../support/fixtures.ts';
import { freePort } from '../support/ports.ts';
import { sharedSecretsEnv, startTestService, type TestService } from '../support/service.ts';
import { type OidcUpstream, startOidcUpstream, upstreamLogin } from './upstream.ts';

/** An IPv4 address of this machine that is neither loopback nor public, or undefined when it has none. */
async function privateAddressOfThisMachine(): Promise<string | undefined> {
  for (const each of Object.values(networkInterfaces()).flat()) {
    if (!each || each.internal || each.family !== 'IPv4') continue;
    const refused = await vetAddress(new URL(`http://${each.address}/`), { allowLoopback: false }).then(
      () => false,
      () => true,
    );
    if (refused) return each.address;
  }
  return undefined;
}
const privateAddress = await privateAddressOfThisMachine();

interface Trap {
  url: string;
  /** TCP connections accepted so far: a refused address must never see one. */
  readonly connections: number;
  close(): Promise<void>;
}

/** A listener that only counts who connects, at an address where no request may ever arrive. */
async function startTrap(host: string): Promise<Trap> {
  let connections = 0;
  const server = createNetServer((socket) => {
    connections++;
    socket.destroy();
  });
  server.listen(0, host);
  await once(server, 'listening');
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}`,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ORG = `(select o.id from organizations o join accounts a on a.id = o.account_id where a.handle = $1)`;
const providerRows = (service: TestService, org: string) =>
  sql(service, `select issuer from organization_sign_in_providers where organization_id = ${ORG}`, [org]);

async function setIssuer(admin: TestUser, org: string, issuer: string) {
  return sdk.setIdentityProvider({
    client: admin.client,
    path: { org },
    body: { issuer, clientId: 'client', clientSecret: 'secret', enrollRole: 'member' },
  });
}

describe('the address guard with ORG_IDP_ALLOWED_NETWORKS', () => {
  const policy = (networks: string) => {
    const config = loadConfig({ ...sharedSecretsEnv, ORG_IDP_ALLOWED_NETWORKS: networks });
    return { allowLoopback: false, allowedNetworks: allowedNetworks(config.orgIdpAllowedNetworks) };
  };

  it('admits the listed networks besides public addresses, and nothing else', async () => {
    const allowed = policy('10.20.0.0/16, fd00:1234::/32, 192.168.7.7');
    for (const [url, address, family] of [
      ['https://10.20.3.4/', '10.20.3.4', 4],
      ['https://[fd00:1234::5]/', 'fd00:1234::5', 6],
      ['https://192.168.7.7/', '192.168.7.7', 4],
      // IPv4-mapped (the URL spells it in hex): judged by its IPv4 address.
      ['https://[::ffff:10.20.0.9]/', '::ffff:a14:9', 6],
      ['https://93.184.216.34/', '93.184.216.34', 4],
    ] as const) {
      await expect(vetAddress(new URL(url), allowed), url).resolves.toEqual({
        address,
        family,
        local: false,
      });
    }
    for (const url of [
      'https://10.21.0.1/',
      'https://192.168.7.8/',
      'https://169.254.169.254/',
      'https://127.0.0.1/',
      'https://localhost/',
      'https://[fd00:1235::1]/',
    ]) {
      await expect(vetAddress(new URL(url), allowed), url).rejects.toBeInstanceOf(OutboundRefused);
    }
    // Unset, only public addresses.
    await expect(vetAddress(new URL('https://10.20.3.4/'), policy(''))).rejects.toThrow(
      /not a public address/,
    );
  });
});

describe('an organization provider, as in production', () => {
  let service: TestService;
  let loopbackTrap: Trap;
  let admin: TestUser;
  const org = uniqueHandle('prodorg');

  beforeAll(async () => {
    loopbackTrap = await startTrap('127.0.0.1');
    const port = await freePort();
    service = await startTestService({
      NODE_ENV: 'production',
      PORT: String(port),
      BASE_URL: `https://127.0.0.1:${port}`,
    });
    // BASE_URL says https, as production requires; the test talks plain http to the port.
    admin = await createTestUser(
      { url: `http://127.0.0.1:${port}`, database: service.database },
      uniqueHandle('prodadm'),
    );
    await createTestOrganization(service, org, admin);
  });
  afterAll(async () => {
    await service?.close();
    await loopbackTrap?.close();
  });

  it('refuses an issuer at a link-local, private or loopback address with a 400, storing nothing', async () => {
    const loopbackPort = new URL(loopbackTrap.url).port;
    for (const [issuer, reason] of [
      ['https://169.254.169.254/', /169\.254\.169\.254 is not a public address/],
      ['https://10.0.0.1/', /10\.0\.0\.1 is not a public address/],
      // A name that resolves to loopback, where something listens.
      [`https://localhost:${loopbackPort}`, /localhost resolves to (127\.0\.0\.1|::1), not a public address/],
      [`https://[::1]:${loopbackPort}`, /::1 is not a public address/],
    ] as const) {
      const refused = await setIssuer(admin, org, issuer);
      expect(refused.response.status, issuer).toBe(400);
      expect(refused.response.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(refused.error?.errors?.[0]?.pointer, issuer).toBe('/body/issuer');
      expect(refused.error?.detail, issuer).toMatch(reason);
    }
    expect(loopbackTrap.connections).toBe(0);
    expect(await providerRows(service, org)).toEqual([]);
  });
});

describe.skipIf(!privateAddress)('an organization provider on a private network', () => {
  let dns: TxtServer;
  let idp: OidcUpstream;
  let pointing: Server;
  let pointingUrl: string;
  let trap: Trap;
  /** With ORG_IDP_ALLOWED_NETWORKS naming this machine's private address. */
  let allowing: TestService;
  /** The same data, without the setting: the private address is refused. */
  let guarded: TestService;
  let admin: TestUser;
  const allowedOrg = uniqueHandle('lanorg');
  const refusedOrg = uniqueHandle('outorg');
  const pointingOrg = uniqueHandle('ptorg');
  const domainOf = (org: string) => `${org}.example`;

  beforeAll(async () => {
    dns = await startTxtServer();
    trap = await startTrap(privateAddress!);
    const [allowingPort, guardedPort] = [await freePort(), await freePort()];
    idp = await startOidcUpstream(
      [allowingPort, guardedPort].map((port) => `http://127.0.0.1:${port}/signin/callback/org`),
      { host: privateAddress },
    );
    // A provider on loopback (allowed outside production) whose discovery document sends the token
    // request to the private address, and one whose discovery answers with a redirect there.
    pointing = createHttpServer((req, res) => {
      if (req.url === '/moved/.well-known/openid-configuration') {
        res.writeHead(302, { location: `${trap.url}/.well-known/openid-configuration` }).end();
        return;
      }
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          issuer: pointingUrl,
          authorization_endpoint: `${pointingUrl}/authorize`,
          token_endpoint: `${trap.url}/token`,
          jwks_uri: `${pointingUrl}/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    pointing.listen(0, '127.0.0.1');
    await once(pointing, 'listening');
    pointingUrl = `http://127.0.0.1:${(pointing.address() as AddressInfo).port}`;

    const common = { DEV_LOGIN: 'false', DNS_SERVERS: dns.address };
    allowing = await startTestService({
      ...common,
      PORT: String(allowingPort),
      BASE_URL: `http://127.0.0.1:${allowingPort}`,
      ORG_IDP_ALLOWED_NETWORKS: `${privateAddress}/32`,
    });
    guarded = await startTestService(
      { ...common, PORT: String(guardedPort), BASE_URL: `http://127.0.0.1:${guardedPort}` },
      { database: allowing.database },
    );

    admin = await createTestUser(allowing, uniqueHandle('lanadm'));
    for (const org of [allowedOrg, refusedOrg, pointingOrg]) {
      await createTestOrganization(allowing, org, admin);
      const added = await sdk.addDomain({
        client: admin.client,
        path: { org },
        body: { domain: domainOf(org) },
      });
      dns.records.set(added.data!.txtRecord.name, added.data!.txtRecord.value);
      const verified = await sdk.verifyDomain({ client: admin.client, path: { org, domain: domainOf(org) } });
      expect(verified.response.status).toBe(200);
    }
  });
  afterAll(async () => {
    await guarded?.close();
    await allowing?.close();
    await idp?.close();
    pointing?.close();
    await trap?.close();
    await dns?.close();
  });

  /** "Sign in with your organization" at `service`, through the provider, as `login`. */
  async function orgSignIn(service: TestService, email: string, login: string) {
    const jar = new CookieJar();
    const start = await jar.fetch(`${service.url}/signin/org?email=${encodeURIComponent(email)}`);
    if (start.status !== 303) return { status: start.status, text: await start.text() };
    const back = await upstreamLogin(jar, start.headers.get('location')!, login);
    const done = await jar.fetch(back);
    return { status: done.status, text: await done.text() };
  }

  it('accepts a provider in an allowed network, and people sign in through it', async () => {
    const saved = await sdk.setIdentityProvider({
      client: admin.client,
      path: { org: allowedOrg },
      body: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        enrollRole: 'member',
      },
    });
    expect(saved.response.status, JSON.stringify(saved.error)).toBe(200);
    const login = `dana-${uniqueHandle('l')}`;
    idp.accounts.set(login, { email: `${login}@${domainOf(allowedOrg)}`, email_verified: true });
    const signedIn = await orgSignIn(allowing, `${login}@${domainOf(allowedOrg)}`, login);
    expect(signedIn.status).toBe(303);
    const roles = await sql(
      allowing,
      `select m.role from identities i join memberships m on m.user_id = i.user_id
        where i.subject = $1 and m.organization_id = ${ORG.replace('$1', '$2')}`,
      [login, allowedOrg],
    );
    expect(roles).toEqual([{ role: 'member' }]);
  });

  it('without the setting, refuses that provider with a 400 and never connects to it', async () => {
    const guardedAdmin = { ...admin, client: sdkClient(guarded, admin.token) };
    const before = idp.requests;
    const refused = await setIssuer(guardedAdmin, refusedOrg, idp.issuer);
    expect(refused.response.status).toBe(400);
    expect(refused.error?.errors?.[0]?.pointer).toBe('/body/issuer');
    expect(refused.error?.detail).toContain(`${privateAddress} is not a public address`);
    expect(idp.requests).toBe(before);
    // Outside production plain http is allowed, but not to these.
    for (const issuer of ['http://169.254.169.254/', 'http://10.0.0.1/']) {
      const internal = await setIssuer(guardedAdmin, refusedOrg, issuer);
      expect(internal.response.status, issuer).toBe(400);
      expect(internal.error?.detail, issuer).toContain(`${new URL(issuer).hostname} is not a public address`);
    }
    expect(await providerRows(guarded, refusedOrg)).toEqual([]);
  });

  it('at sign-in, a provider whose address is refused gets the sign-in error page, not a 500', async () => {
    // Saved where its network was allowed; the other instance refuses it now, as when an address changes.
    const before = idp.requests;
    const refused = await orgSignIn(guarded, `erin@${domainOf(allowedOrg)}`, 'erin');
    expect(refused.status).toBe(502);
    expect(refused.text).toContain('at an address this service does not connect to');
    expect(idp.requests).toBe(before);
  });

  it('refuses a token endpoint at a refused address, and does not follow a redirect there', async () => {
    const guardedAdmin = { ...admin, client: sdkClient(guarded, admin.token) };
    const moved = await setIssuer(guardedAdmin, refusedOrg, `${pointingUrl}/moved`);
    expect(moved.response.status).toBe(400);
    expect(await providerRows(guarded, refusedOrg)).toEqual([]);

    // The discovery document is at an allowed address; only the token request is refused.
    const saved = await setIssuer(guardedAdmin, pointingOrg, pointingUrl);
    expect(saved.response.status, JSON.stringify(saved.error)).toBe(200);
    const jar = new CookieJar();
    const start = await jar.fetch(
      `${guarded.url}/signin/org?email=${encodeURIComponent(`finn@${domainOf(pointingOrg)}`)}`,
    );
    expect(start.status).toBe(303);
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const back = await jar.fetch(`${guarded.url}/signin/callback/org?code=some-code&state=${state}`);
    expect(back.status).toBe(400);
    expect(await back.text()).toContain('at an address this service does not connect to');
    expect(trap.connections).toBe(0);
  });
});
