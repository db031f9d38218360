// Client ID Metadata Documents: an agent names itself by an https URL, our server fetches the document
// there (guarded: src/oauth/cimd.ts), the consent page shows who is asking, and the v2 MCP SDK client
// pinned to 2026-07-28 gets an OAuth token that way and uses the tools. Each abuse of the fetch is refused.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client,
  type OAuthClientMetadata,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundRefused } from '../../src/lib/address-guard.ts';
import { guardedFetch, vettedAddress } from '../../src/oauth/cimd.ts';
import { InMemoryOAuthProvider, launchChromium, MODERN_REVISION, recordingFetch } from '../mcp/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { useLoopbackCallback } from '../support/suite.ts';
import { authorizationRequest, CookieJar, csrfOf, postForm, runAuthorization, sql } from './helpers.ts';

let service: TestService;
let documents: Server;
let browser: Browser | undefined;
let docsOrigin: string;
let certDir: string;
// The agent's redirect listener (its beforeAll runs before this file's, which serves documents naming it).
const loopback = useLoopbackCallback();
const callbacks = loopback.received;
/** Documents the test serves, by path; a function answers the request itself. */
const served = new Map<string, unknown>();

const goodPath = '/agents/docs-agent.json';
const documentFor = (path: string, extra: Record<string, unknown> = {}) => ({
  client_id: `${docsOrigin}${path}`,
  client_name: 'Docs Agent',
  redirect_uris: [loopback.uri],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
  ...extra,
});

beforeAll(async () => {
  // A self-signed certificate for the document server on 127.0.0.1 (the service is in test mode, where
  // CIMD_ALLOW_LOOPBACK lets it fetch from loopback without verifying a local certificate).
  certDir = mkdtempSync(join(tmpdir(), 'l10n-cimd-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(certDir, 'key.pem'),
      '-out',
      join(certDir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  documents = createHttpsServer(
    { key: readFileSync(join(certDir, 'key.pem')), cert: readFileSync(join(certDir, 'cert.pem')) },
    (req, res) => {
      const body = served.get(req.url ?? '');
      if (typeof body === 'function') return body(req, res);
      if (body === undefined) return res.writeHead(404).end();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    },
  );
  documents.listen(0, '127.0.0.1');
  await once(documents, 'listening');
  docsOrigin = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`;

  served.set(goodPath, documentFor(goodPath));
  served.set('/agents/moved.json', (_req: unknown, res: ServerResponse) =>
    res.writeHead(302, { Location: goodPath }).end(),
  );
  served.set('/agents/big.json', documentFor('/agents/big.json', { client_name: 'x'.repeat(20_000) }));
  served.set('/agents/slow.json', (_req: unknown, res: ServerResponse) => {
    // Never answers within the fetch's time limit; closed by the server at the end.
    setTimeout(() => res.writeHead(200).end(), 10_000).unref();
  });
  served.set('/agents/other-redirect.json', {
    ...documentFor('/agents/other-redirect.json'),
    redirect_uris: ['http://127.0.0.1:9/elsewhere'],
  });

  service = await startTestService({ DEV_LOGIN: 'true' });
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  documents?.closeAllConnections();
  documents?.close();
  await service?.close();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

const production = { allowLoopback: false, timeoutMs: 2000, maxBytes: 5 * 1024 };

describe('the guarded document fetch, as in production', () => {
  it('refuses loopback, private and link-local addresses before connecting', async () => {
    for (const url of [
      `${docsOrigin}${goodPath}`,
      'https://localhost/agent.json',
      'https://10.1.2.3/agent.json',
      'https://192.168.0.10/agent.json',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/agent.json',
      'https://[fe80::1]/agent.json',
      'https://[::ffff:10.0.0.1]/agent.json',
    ]) {
      await expect(vettedAddress(new URL(url), production), url).rejects.toBeInstanceOf(OutboundRefused);
    }
    await expect(guardedFetch(production)(`${docsOrigin}${goodPath}`)).rejects.toThrow(
      /not a public address/,
    );
  });

  it('refuses IPv6 that reaches an internal IPv4 address, tunnels, and every block that is not global unicast', async () => {
    for (const host of [
      '[::7f00:1]', // IPv4-compatible ::127.0.0.1 (deprecated)
      '[::a00:1]', // IPv4-compatible ::10.0.0.1
      '[::ffff:0:a00:1]', // IPv4-translated ::ffff:0:10.0.0.1
      '[::ffff:a9fe:a9fe]', // IPv4-mapped 169.254.169.254, in hex
      '[64:ff9b::7f00:1]', // well-known NAT64 prefix around 127.0.0.1
      '[64:ff9b::a00:1]', // … and around 10.0.0.1
      '[64:ff9b:1::a00:1]', // local-use NAT64 (RFC 8215)
      '[64:ff9b:1::5db8:d822]', // … refused whatever it carries
      '[2002:7f00:1::1]', // 6to4 around 127.0.0.1
      '[2002:5db8:d822::1]', // 6to4 is refused even around a public address
      '[2001:0:4136:e378:8000:63bf:3fff:fdd2]', // Teredo
      '[2001:2::1]', // benchmarking
      '[2001:db8::1]', // documentation
      '[3fff::1]', // documentation
      '[100::1]', // discard-only
      '[5f00::1]', // SRv6 segment identifiers
      '[fec0::1]', // site-local (deprecated)
      '[fd12:3456::1]', // unique-local
      '[ff02::1]', // multicast
      '[::]', // unspecified
      '192.0.2.1', // documentation (TEST-NET-1)
      '198.51.100.7', // documentation (TEST-NET-2)
      '203.0.113.9', // documentation (TEST-NET-3)
    ]) {
      await expect(vettedAddress(new URL(`https://${host}/agent.json`), production), host).rejects.toThrow(
        /not a public address/,
      );
    }
  });

  it('accepts global unicast, and an IPv4-carrying form by its public IPv4 address', async () => {
    for (const [host, address, family] of [
      ['93.184.216.34', '93.184.216.34', 4],
      ['[2606:2800:220:1:248:1893:25c8:1946]', '2606:2800:220:1:248:1893:25c8:1946', 6],
      // 93.184.216.34 through the well-known NAT64 prefix: how an IPv6-only network with DNS64 reaches it.
      ['[64:ff9b::5db8:d822]', '64:ff9b::5db8:d822', 6],
      ['[::ffff:5db8:d822]', '::ffff:5db8:d822', 6],
    ] as const) {
      await expect(vettedAddress(new URL(`https://${host}/agent.json`), production), host).resolves.toEqual({
        address,
        family,
        local: false,
      });
    }
  });

  it('refuses a non-https URL, even on a public address', async () => {
    await expect(vettedAddress(new URL('http://93.184.216.34/agent.json'), production)).rejects.toThrow(
      /https/,
    );
    // Outside production, plain http is allowed on loopback only.
    const development = { ...production, allowLoopback: true };
    await expect(vettedAddress(new URL('http://127.0.0.1:9/agent.json'), development)).resolves.toEqual({
      address: '127.0.0.1',
      family: 4,
      local: true,
    });
    await expect(vettedAddress(new URL('http://93.184.216.34/agent.json'), development)).rejects.toThrow(
      /https/,
    );
  });

  it('does not follow a redirect, and stops at the size limit', async () => {
    const development = guardedFetch({ ...production, allowLoopback: true });
    const moved = await development(`${docsOrigin}/agents/moved.json`);
    expect(moved.status).toBe(302);
    await expect(development(`${docsOrigin}/agents/big.json`)).rejects.toThrow(/larger than/);
    await expect(development(`${docsOrigin}/agents/slow.json`)).rejects.toThrow();
    const good = await development(`${docsOrigin}${goodPath}`);
    expect(await good.json()).toMatchObject({ client_name: 'Docs Agent' });
  });
});

/** The authorization request a CIMD client starts with; the provider fetches its document first. */
async function authorize(path: string, redirect = loopback.uri) {
  const url = new URL(`${service.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    client_id: `${docsOrigin}${path}`,
    response_type: 'code',
    redirect_uri: redirect,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    scope: 'project:read',
    resource: `${service.url}/mcp`,
  }).toString();
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location'), body: await response.text() };
}

describe('client ID metadata documents at the authorization server', () => {
  it('advertises client_id_metadata_document_supported', async () => {
    const metadata = await (await fetch(`${service.url}/.well-known/oauth-authorization-server`)).json();
    expect(metadata.client_id_metadata_document_supported).toBe(true);
    // Dynamic registration stays for clients without a document.
    expect(metadata.registration_endpoint).toBe(`${service.url}/oauth/register`);
  });

  it('accepts a good document and starts the sign-in', async () => {
    const started = await authorize(goodPath);
    expect(started.status).toBe(303);
    expect(started.location).toMatch(/\/oauth\/interaction\//);
  });

  it('refuses a redirect, an oversized or slow document, and a redirect_uri the document does not list', async () => {
    for (const path of [
      '/agents/moved.json',
      '/agents/big.json',
      '/agents/slow.json',
      '/agents/missing.json',
    ]) {
      const refused = await authorize(path);
      expect(refused.status, path).toBe(400);
      expect(refused.body, path).toMatch(/invalid_client/);
    }
    const wrongRedirect = await authorize('/agents/other-redirect.json');
    expect(wrongRedirect.status).toBe(400);
    expect(wrongRedirect.body).toMatch(/redirect_uri/);
  });

  it('holds a document to the rules of a registered client: loopback on any port, no plain http elsewhere', async () => {
    const listed = new URL(loopback.uri);
    // The document lists the loopback address on one port; the agent's listener is on another today.
    const portPath = '/agents/port.json';
    served.set(
      portPath,
      documentFor(portPath, { redirect_uris: [`http://127.0.0.1:3000${listed.pathname}`] }),
    );
    const otherPort = await authorize(portPath, loopback.uri);
    expect(otherPort.status).toBe(303);
    expect(otherPort.location).toMatch(/\/oauth\/interaction\//);
    // A private-use scheme, as desktop apps use, is allowed as for registered clients.
    const schemePath = '/agents/scheme.json';
    served.set(schemePath, documentFor(schemePath, { redirect_uris: ['com.example.agent:/callback'] }));
    expect((await authorize(schemePath, 'com.example.agent:/callback')).status).toBe(303);
    // Plain http to another host would carry the code in clear: refused, as at registration.
    const cleartextPath = '/agents/cleartext.json';
    served.set(cleartextPath, documentFor(cleartextPath, { redirect_uris: ['http://app.example.net/cb'] }));
    const cleartext = await authorize(cleartextPath, 'http://app.example.net/cb');
    expect(cleartext.status).toBe(400);
    expect(cleartext.body).toMatch(/can only use loopback addresses/);
  });

  it('takes a document that lists our scopes, or names no token endpoint authentication, as a public client', async () => {
    const scopePath = '/agents/scoped.json';
    served.set(scopePath, documentFor(scopePath, { scope: 'project:read user:read' }));
    expect((await authorize(scopePath)).status).toBe(303);
    const barePath = '/agents/bare.json';
    const { token_endpoint_auth_method: _none, ...bare } = documentFor(barePath);
    served.set(barePath, bare);
    expect((await authorize(barePath)).status).toBe(303);
  });

  it('lets the person disconnect an app with a long document URL, and refuses a URL too long to disconnect', async () => {
    // Longer than the 200 characters of other identifiers, within the 2048 a client_id URL may have.
    const longPath = `/agents/${'long-'.repeat(50)}agent.json`;
    served.set(longPath, documentFor(longPath, { client_name: 'Long Agent' }));
    const clientId = `${docsOrigin}${longPath}`;
    expect(clientId.length).toBeGreaterThan(200);
    const jar = new CookieJar();
    const { url } = await authorizationRequest(service, { client_id: clientId }, loopback.uri, {
      scope: 'project:read',
    });
    const { callback } = await runAuthorization(service, jar, url, loopback.uri, {
      handle: 'longapp',
      create: true,
    });
    expect(callback.searchParams.get('code')).toBeTruthy();

    const revoke = `/settings/apps/${encodeURIComponent(clientId)}/revoke`;
    const page = await (await jar.fetch(`${service.url}/settings/apps`)).text();
    expect(page).toContain(revoke);
    const disconnected = await postForm(jar, `${service.url}${revoke}`, {
      csrf: csrfOf(page.slice(page.indexOf(revoke))),
    });
    expect(disconnected.status).toBe(303);
    const grants = await sql(
      service,
      `select 1 from oidc_models where model = 'Grant' and payload->>'clientId' = $1`,
      [clientId],
    );
    expect(grants).toEqual([]);

    // A client_id URL longer than that is refused before its document is fetched.
    const tooLongPath = `/agents/${'x'.repeat(2048)}.json`;
    served.set(tooLongPath, documentFor(tooLongPath));
    const refused = await authorize(tooLongPath);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/invalid_client/);
  });
});

/** The agent's OAuth state, with a client ID metadata document URL instead of registration. */
class CimdAgent extends InMemoryOAuthProvider {
  get clientMetadataUrl() {
    return `${docsOrigin}${goodPath}`;
  }
  get redirectUrl() {
    return loopback.uri;
  }
  get clientMetadata(): OAuthClientMetadata {
    return documentFor(goodPath) as OAuthClientMetadata;
  }
}

describe.skipIf(!hasChromium)('an agent identified by its metadata document', () => {
  it('gets a token through sign-in and consent (which names it and its host) and uses the tools at 2026-07-28', async () => {
    const agent = new CimdAgent('cimd-state');
    const requests: string[] = [];
    const transport = () =>
      new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), {
        authProvider: agent,
        fetch: recordingFetch(requests),
      });
    const options = { versionNegotiation: { mode: { pin: MODERN_REVISION } } } as const;

    const first = new Client({ name: 'docs-agent', version: '1.0.0' }, options);
    const firstTransport = transport();
    await expect(first.connect(firstTransport)).rejects.toBeInstanceOf(UnauthorizedError);
    // No registration: the client_id is the document's URL.
    expect(requests.some((r) => r.startsWith('POST /oauth/register'))).toBe(false);
    const authorization = agent.authorizationUrl!;
    expect(authorization.searchParams.get('client_id')).toBe(`${docsOrigin}${goodPath}`);

    const context = await browser!.newContext();
    try {
      const page = await context.newPage();
      await page.goto(authorization.toString());
      await page.getByLabel('Handle').fill('cimduser');
      await page.getByRole('button', { name: 'Create and sign in' }).click();
      const consent = page.locator('body');
      await expect.poll(() => consent.textContent()).toContain('Docs Agent');
      expect(await consent.textContent()).toContain(
        `It identifies itself with a document published by ${new URL(docsOrigin).host}.`,
      );
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL((url) => url.toString().startsWith(loopback.uri));
    } finally {
      await context.close();
    }
    const callback = callbacks.at(-1)!;
    expect(callback.searchParams.get('state')).toBe('cimd-state');
    await firstTransport.finishAuth(callback.searchParams);
    expect(agent.saved?.access_token).toBeTruthy();

    const client = new Client({ name: 'docs-agent', version: '1.0.0' }, options);
    await client.connect(transport());
    try {
      expect(client.getProtocolEra()).toBe('modern');
      const accounts = await client.callTool({ name: 'list_accounts', arguments: {} });
      expect(JSON.stringify(accounts.structuredContent)).toContain('"cimduser"');
      const created = await client.callTool({
        name: 'create_project',
        arguments: { account: 'cimduser', handle: 'from-cimd', name: 'From CIMD', sourceLocale: 'en' },
      });
      expect(created.isError).toBeFalsy();
      expect(created.structuredContent).toMatchObject({ handle: 'from-cimd' });
    } finally {
      await client.close();
    }
  });
});
