// What /oauth and /.well-known answer besides their endpoints' own work: a known endpoint asked with a
// method it does not take gets 405 with Allow, an unknown address 404, both as an RFC 6749 JSON error body
// (never koa's text/plain "Not Found"); OPTIONS gets 204 with Allow, and the CORS preflights that
// oidc-provider and the protected-resource documents answer still succeed.

import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';
import { useOAuthService } from '../support/suite.ts';

const service = useOAuthService();

const GET = 'GET, HEAD, OPTIONS';
const POST = 'POST, OPTIONS';

const AS_METADATA = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'];
const PR_METADATA = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/mcp',
  '/.well-known/oauth-protected-resource/api',
];

/** [method, path, the Allow header expected]: a method each endpoint does not take. */
const WRONG_METHODS: [string, string, string][] = [
  ...[...AS_METADATA, '/oauth/jwks'].flatMap((path) =>
    ['POST', 'PUT', 'PATCH', 'DELETE'].map((method): [string, string, string] => [method, path, GET]),
  ),
  ...PR_METADATA.flatMap((path) =>
    ['POST', 'PUT', 'PATCH', 'DELETE'].map((method): [string, string, string] => [method, path, GET]),
  ),
  ['GET', '/oauth/token', POST],
  ['DELETE', '/oauth/token', POST],
  ['GET', '/oauth/revoke', POST],
  ['GET', '/oauth/introspect', POST],
  ['GET', '/oauth/register', POST],
  ['POST', '/oauth/authorize', GET],
  ['PUT', '/oauth/authorize/some-uid', GET],
  ...['POST', 'PUT', 'DELETE'].map((method): [string, string, string] => [
    method,
    '/oauth/register/some-client',
    GET,
  ]),
  ['GET', '/oauth/interaction/some-uid/login', POST],
  ['DELETE', '/oauth/interaction/some-uid', GET],
];

const UNKNOWN_PATHS = [
  '/oauth',
  '/oauth/',
  '/oauth/nothing',
  '/oauth/jwks/extra',
  '/oauth/authorize/some-uid/extra',
  '/oauth/register/some-client/extra',
  '/oauth/interaction/some-uid/nothing',
  '/.well-known',
  '/.well-known/nothing',
  '/.well-known/oauth-protected-resource/x',
  '/.well-known/oauth-authorization-server/mcp',
];

async function expectOAuthError(response: Response, status: number): Promise<{ error_description: string }> {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: string; error_description: string };
  expect(body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
  // RFC 6749 §5.2: printable ASCII without `"` and `\`.
  expect(body.error_description).toMatch(/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/);
  return body;
}

describe('a method an endpoint does not take', () => {
  it('gets 405 with Allow and an RFC 6749 error body', async () => {
    for (const [method, path, allow] of WRONG_METHODS) {
      const response = await fetch(`${service.url}${path}`, { method });
      expect({ method, path, status: response.status, allow: response.headers.get('allow') }).toEqual({
        method,
        path,
        status: 405,
        allow,
      });
      const { error_description } = await expectOAuthError(response, 405);
      expect(error_description).toContain(method);
    }
  });

  it('gets 405 with Allow for HEAD where only POST is taken (without a body)', async () => {
    const response = await fetch(`${service.url}/oauth/token`, { method: 'HEAD' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(POST);
  });
});

describe('an address under /oauth or /.well-known that is no endpoint', () => {
  it('gets 404 with an RFC 6749 error body, whatever the method', async () => {
    for (const path of UNKNOWN_PATHS) {
      for (const method of ['GET', 'POST', 'OPTIONS']) {
        const response = await fetch(`${service.url}${path}`, { method });
        expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 });
        await expectOAuthError(response, 404);
      }
    }
  });

  it('leaves the service 404 of other paths as it is', async () => {
    for (const path of ['/oauthx', '/.well-knownx', '/no/such/thing']) {
      const response = await fetch(`${service.url}${path}`, { headers: { accept: 'application/json' } });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });
});

describe('OPTIONS', () => {
  it('answers 204 with Allow when it is not a CORS preflight', async () => {
    for (const [path, allow] of [
      ['/.well-known/oauth-authorization-server', GET],
      ['/.well-known/openid-configuration', GET],
      ['/oauth/jwks', GET],
      ['/oauth/authorize', GET],
      ['/oauth/token', POST],
      ['/oauth/revoke', POST],
      ['/oauth/introspect', POST],
      ['/oauth/register', POST],
      ['/oauth/register/some-client', GET],
    ]) {
      const response = await fetch(`${service.url}${path}`, { method: 'OPTIONS' });
      expect({ path, status: response.status, allow: response.headers.get('allow') }).toEqual({
        path,
        status: 204,
        allow,
      });
    }
  });

  it('still lets a browser client through the preflights of discovery, keys and the token endpoints', async () => {
    const origin = 'https://inspector.example';
    for (const [path, method, allowOrigin] of [
      ['/.well-known/oauth-authorization-server', 'GET', origin],
      ['/.well-known/openid-configuration', 'GET', origin],
      ['/oauth/jwks', 'GET', origin],
      ['/oauth/token', 'POST', origin],
      ['/oauth/revoke', 'POST', origin],
      ['/oauth/introspect', 'POST', origin],
      ...PR_METADATA.map((path) => [path, 'GET', '*']),
    ] as const) {
      const response = await fetch(`${service.url}${path}`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': method,
          'access-control-request-headers': 'content-type',
        },
      });
      expect({
        path,
        status: response.status,
        origin: response.headers.get('access-control-allow-origin'),
        methods: response.headers.get('access-control-allow-methods'),
      }).toEqual({ path, status: 204, origin: allowOrigin, methods: expect.stringContaining(method) });
    }
  });
});

describe('the endpoints themselves', () => {
  it('answer at their address with one trailing slash too, with our scopes in both metadata documents', async () => {
    for (const path of AS_METADATA.flatMap((p) => [p, `${p}/`])) {
      const response = await fetch(`${service.url}${path}`);
      expect(response.status).toBe(200);
      const metadata = (await response.json()) as Record<string, unknown>;
      expect(metadata.scopes_supported).toEqual(ALL_SCOPES);
      // RFC 8414 reads a missing list as client_secret_basic alone; public clients revoke with their id.
      expect(metadata.token_endpoint_auth_methods_supported).toContain('none');
      for (const endpoint of ['revocation', 'introspection']) {
        expect(metadata[`${endpoint}_endpoint_auth_methods_supported`], endpoint).toEqual(
          metadata.token_endpoint_auth_methods_supported,
        );
      }
    }
    for (const path of ['/oauth/jwks', '/oauth/jwks/']) {
      const response = await fetch(`${service.url}${path}`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { keys: unknown[] }).keys.length).toBeGreaterThan(0);
    }
  });
});
