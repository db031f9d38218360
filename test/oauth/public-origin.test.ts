// Every URL the authorization server publishes or redirects to is built from BASE_URL, whatever Host,
// X-Forwarded-Host, X-Forwarded-Proto or request target the client sends (this service trusts proxy
// headers, as behind a load balancer), and a Host that is no valid authority never turns into a 5xx.
// fetch() always sends the Host of its URL, so those requests are written byte by byte on a socket.

import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useOAuthService } from '../support/suite.ts';
import {
  authorizationRequest,
  CookieJar,
  csrfOf,
  postForm,
  registerPublicClient,
  runAuthorization,
  uniqueHandle,
} from './helpers.ts';

const service = useOAuthService();

const METADATA = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'];
const MALFORMED_HOSTS = ['a b', '[::1', 'x:y:z', '%', 'a:99999999', ''];

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One HTTP/1.1 request exactly as written (`target` may be an absolute URL), on a connection of its own. */
async function rawRequest(target: string, host: string, method = 'GET'): Promise<RawResponse> {
  const socket = connect(service.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise<void>((resolve, reject) => {
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  socket.write(`${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  await closed;
  const text = Buffer.concat(chunks).toString('utf8');
  const split = text.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(':')).toLowerCase(),
      line.slice(line.indexOf(':') + 1).trim(),
    ]),
  );
  let body = text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') body = unchunk(body);
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

function unchunk(body: string): string {
  let out = '';
  let rest = body;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/** The metadata members that are URLs, each of which must be BASE_URL itself or under it. */
function urlsOf(metadata: Record<string, unknown>): [string, string][] {
  return Object.entries(metadata).filter((entry): entry is [string, string] =>
    typeof entry[1] === 'string' ? /^[a-z][a-z0-9+.-]*:\/\//i.test(entry[1]) : false,
  );
}

function expectEveryUrlUnderBaseUrl(metadata: Record<string, unknown>): void {
  const base = service.config.baseUrl;
  const urls = urlsOf(metadata);
  // issuer, authorization, token, registration, revocation and introspection endpoints, jwks_uri.
  expect(urls.length).toBeGreaterThanOrEqual(7);
  for (const [name, url] of urls) {
    expect({ name, url: url === base || url.startsWith(`${base}/`) }).toEqual({ name, url: true });
  }
}

describe('URLs of the authorization server', () => {
  it('come from BASE_URL whatever Host the client sends', async () => {
    for (const path of METADATA) {
      for (const host of ['evil.example', 'evil.example:8443', `127.0.0.1:${service.port + 1}`]) {
        const response = await rawRequest(path, host);
        expect(response.status).toBe(200);
        expectEveryUrlUnderBaseUrl(JSON.parse(response.body));
      }
    }
  });

  it('ignore X-Forwarded-Host and X-Forwarded-Proto, although proxy headers are trusted here', async () => {
    for (const path of METADATA) {
      const response = await fetch(`${service.url}${path}`, {
        headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
      });
      expect(response.status).toBe(200);
      expectEveryUrlUnderBaseUrl((await response.json()) as Record<string, unknown>);
    }
  });

  it('ignore the host of an absolute request target', async () => {
    for (const path of METADATA) {
      const response = await rawRequest(`http://evil.example${path}`, `127.0.0.1:${service.port}`);
      expect(response.status).toBe(200);
      expectEveryUrlUnderBaseUrl(JSON.parse(response.body));
    }
  });

  it('send the browser back to BASE_URL after sign-in, whatever host the authorization request named', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const { url } = await authorizationRequest(service, client, redirectUri, { scope: 'project:read' });
    const jar = new CookieJar();
    const start = await jar.fetch(url, {
      headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' },
    });
    expect(start.status).toBeGreaterThanOrEqual(300);
    expect(start.status).toBeLessThan(400);
    const interaction = new URL(start.headers.get('location')!, service.url);
    expect(interaction.origin).toBe(service.config.baseUrl);
    const page = await jar.fetch(interaction.href);
    const signedIn = await postForm(jar, `${interaction.href}/login`, {
      csrf: csrfOf(await page.text()),
      handle: uniqueHandle('po'),
      create: '1',
    });
    expect(signedIn.status).toBe(303);
    // The address oidc-provider built for the authorization to resume at, when the request came in.
    const resume = signedIn.headers.get('location')!;
    expect(resume.startsWith(`${service.config.baseUrl}/oauth/authorize/`)).toBe(true);
    const { callback } = await runAuthorization(service, jar, resume, redirectUri, { handle: 'unused' });
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));
  });
});

describe('a Host that is no valid authority', () => {
  it('gets the metadata, with BASE_URL, not a 5xx', async () => {
    for (const path of METADATA) {
      for (const host of MALFORMED_HOSTS) {
        const response = await rawRequest(path, host);
        expect({ host, status: response.status }).toEqual({ host, status: 200 });
        expectEveryUrlUnderBaseUrl(JSON.parse(response.body));
      }
    }
  });

  it('gets no 5xx from the other endpoints of the authorization server either', async () => {
    const { client, redirectUri } = await registerPublicClient(service);
    const { url } = await authorizationRequest(service, client, redirectUri);
    const authorization = new URL(url);
    for (const [method, target] of [
      ['GET', '/oauth/jwks'],
      ['GET', `${authorization.pathname}${authorization.search}`],
      ['GET', '/oauth/authorize/no-such-interaction'],
      ['GET', '/.well-known/oauth-protected-resource/mcp'],
      ['POST', '/oauth/token'],
      ['PUT', '/oauth/jwks'],
      ['GET', '/oauth/no-such-endpoint'],
    ] as const) {
      for (const host of MALFORMED_HOSTS) {
        const { status } = await rawRequest(target, host, method);
        // A dropped connection (no status at all) counts as a failure too.
        const answered = status >= 200 && status < 500;
        expect({ method, target, host, status, answered }).toEqual({
          method,
          target,
          host,
          status,
          answered: true,
        });
      }
    }
  });
});
