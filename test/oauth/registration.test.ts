// Dynamic client registration (RFC 7591) and the discovery documents (RFC 8414, RFC 9728).

import { describe, expect, it } from 'vitest';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';
import { useOAuthService } from '../support/suite.ts';
import { authorize, CookieJar, register, sql, tokenRequest, uniqueHandle } from './helpers.ts';

const service = useOAuthService();

const base = { client_name: 'Reg test', grant_types: ['authorization_code'] };

describe('dynamic client registration', () => {
  it('registers a public client: no secret, refresh allowed, registration fields echoed', async () => {
    const response = await register(service, {
      ...base,
      redirect_uris: [
        'http://localhost:7777/cb',
        'cursor://anysphere.cursor-mcp/oauth/callback',
        'https://app.example.com/cb',
      ],
      token_endpoint_auth_method: 'none',
      scope: 'project:read',
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_name: 'Reg test',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
    });
    expect(body.client_id).toEqual(expect.any(String));
    expect(body.client_secret).toBeUndefined();
    expect(body.scope).toBeUndefined();
  });

  it('issues a secret to confidential clients and stores it only encrypted', async () => {
    for (const method of ['client_secret_basic', 'client_secret_post']) {
      const response = await register(service, {
        ...base,
        redirect_uris: ['https://app.example.com/cb'],
        token_endpoint_auth_method: method,
      });
      expect(response.status).toBe(201);
      const body = (await response.json()) as { client_id: string; client_secret: string };
      expect(body.client_secret.length).toBeGreaterThan(40);
      const rows = (await sql(
        service,
        `select payload::text as p from oidc_models where model = 'Client' and id = $1`,
        [body.client_id],
      )) as { p: string }[];
      expect(rows).toHaveLength(1);
      expect(rows[0]!.p).not.toContain(body.client_secret);
      expect(rows[0]!.p).toContain('client_secret_encrypted');
    }
  });

  it('refuses unsupported token endpoint auth methods with invalid_client_metadata', async () => {
    for (const method of ['private_key_jwt', 'client_secret_jwt', 'tls_client_auth', 'bogus']) {
      const response = await register(service, {
        ...base,
        redirect_uris: ['https://app.example.com/cb'],
        token_endpoint_auth_method: method,
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('invalid_client_metadata');
    }
  });

  it('refuses a client that could never get a token here, where it was registered and then refused each time', async () => {
    for (const [extra, named] of [
      [{ grant_types: [] }, 'grant_types'],
      [{ grant_types: ['refresh_token'] }, 'grant_types'],
      [{ response_types: [] }, 'response_types'],
    ] as const) {
      const response = await register(service, {
        ...base,
        redirect_uris: ['https://app.example.com/cb'],
        ...extra,
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: string; error_description: string };
      expect(body.error).toBe('invalid_client_metadata');
      expect(body.error_description).toMatch(new RegExp(`^${named} must include`));
    }
    // The usual registrations still pass, the grant named or not.
    for (const extra of [{}, { grant_types: ['authorization_code'] }, { response_types: ['code'] }]) {
      const response = await register(service, {
        ...base,
        redirect_uris: ['https://app.example.com/cb'],
        ...extra,
      });
      expect(response.status).toBe(201);
    }
  });

  it('takes a client_name of up to 100 characters, the most a consent page shows', async () => {
    const register100 = (name: string) =>
      register(service, { ...base, client_name: name, redirect_uris: ['https://app.example.com/cb'] });
    expect((await register100(`${'ü'.repeat(99)}😀`)).status).toBe(201);
    const long = await register100('Localization service (official) '.repeat(4));
    expect(long.status).toBe(400);
    expect(await long.json()).toEqual({
      error: 'invalid_client_metadata',
      error_description: 'client_name must be at most 100 characters',
    });
  });

  it('refuses bad redirect URIs: javascript:, data:, fragments, plain http off loopback', async () => {
    for (const uri of [
      'javascript:alert(1)',
      'data:text/html,hi',
      'https://app.example.com/cb#frag',
      'http://app.example.com/cb',
      'not a uri',
    ]) {
      const response = await register(service, {
        ...base,
        redirect_uris: [uri],
        token_endpoint_auth_method: 'none',
      });
      expect({ uri, status: response.status }).toEqual({ uri, status: 400 });
      expect(['invalid_redirect_uri', 'invalid_client_metadata']).toContain(
        ((await response.json()) as { error: string }).error,
      );
    }
  });

  it('refuses other grant types and a body that is not JSON', async () => {
    const implicit = await register(service, {
      ...base,
      grant_types: ['implicit'],
      redirect_uris: ['https://app.example.com/cb'],
    });
    expect(implicit.status).toBe(400);
    const garbage = await fetch(`${service.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.250' },
      body: '{not json',
    });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { error: string }).error).toBe('invalid_client_metadata');
  });

  it('lets a client registered with a narrow scope ask for other scopes later', async () => {
    const response = await register(service, {
      ...base,
      redirect_uris: ['http://127.0.0.1:5050/cb'],
      token_endpoint_auth_method: 'none',
      scope: 'project:read',
    });
    const client = (await response.json()) as { client_id: string };
    const redirectUri = 'http://127.0.0.1:5050/cb';
    const { code, verifier } = await authorize(
      service,
      new CookieJar(),
      client,
      redirectUri,
      { handle: uniqueHandle('reg'), create: true },
      { scope: 'glossary:write' },
    );
    const token = await tokenRequest(service, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    });
    expect(token.status).toBe(200);
    expect(((await token.json()) as { scope: string }).scope).toBe('glossary:write');
  });

  it('authenticates a confidential client with client_secret_basic at the token endpoint', async () => {
    const redirectUri = 'https://app.example.com/cb';
    const response = await register(service, {
      ...base,
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    const client = (await response.json()) as { client_id: string; client_secret: string };
    const { code, verifier } = await authorize(service, new CookieJar(), client, redirectUri, {
      handle: uniqueHandle('conf'),
      create: true,
    });
    const basic = (secret: string) =>
      `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
    const fields = {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    };
    const wrong = await tokenRequest(service, fields, { authorization: basic('wrong') });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: string }).error).toBe('invalid_client');
    const right = await tokenRequest(service, fields, { authorization: basic(client.client_secret) });
    expect(right.status).toBe(200);
  });
});

describe('discovery', () => {
  it('serves authorization server metadata (RFC 8414) with our scopes, S256 only and CORS', async () => {
    const response = await fetch(`${service.url}/.well-known/oauth-authorization-server`, {
      headers: { origin: 'https://inspector.example' },
    });
    expect(response.status).toBe(200);
    // oidc-provider's open CORS reflects the origin.
    expect(response.headers.get('access-control-allow-origin')).toBe('https://inspector.example');
    const metadata = (await response.json()) as Record<string, unknown>;
    const issuer = service.config.baseUrl;
    expect(metadata).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      introspection_endpoint: `${issuer}/oauth/introspect`,
      jwks_uri: `${issuer}/oauth/jwks`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ALL_SCOPES,
    });
    expect((metadata.grant_types_supported as string[]).sort()).toEqual([
      'authorization_code',
      'refresh_token',
    ]);
    expect((metadata.token_endpoint_auth_methods_supported as string[]).sort()).toEqual([
      'client_secret_basic',
      'client_secret_post',
      'none',
    ]);
    expect(metadata.device_authorization_endpoint).toBeUndefined();
    expect(metadata.userinfo_endpoint).toBeUndefined();
  });

  it('serves protected resource metadata (RFC 9728) for the API and the MCP server', async () => {
    const issuer = service.config.baseUrl;
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource', `${issuer}/api`],
      ['/.well-known/oauth-protected-resource/api', `${issuer}/api`],
      ['/.well-known/oauth-protected-resource/mcp', `${issuer}/mcp`],
    ] as const) {
      const response = await fetch(`${service.url}${path}`);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(await response.json()).toMatchObject({
        resource,
        authorization_servers: [issuer],
        scopes_supported: ALL_SCOPES,
        bearer_methods_supported: ['header'],
      });
    }
    const preflight = await fetch(`${service.url}/.well-known/oauth-protected-resource/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'https://inspector.example', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
  });
});
