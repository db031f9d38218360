// The whole authorization code flow, driven by panva's oauth4webapi against the running service.

import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resourceFor } from '../../src/oauth/index.ts';
import { useOAuthService } from '../support/suite.ts';
import { CookieJar, discover, inProcessOAuth, insecure, runAuthorization, uniqueHandle } from './helpers.ts';

const service = useOAuthService();
let verifier: Awaited<ReturnType<typeof inProcessOAuth>>;

beforeAll(async () => {
  verifier = await inProcessOAuth(service);
});
afterAll(async () => {
  await verifier?.close();
});

const callApi = (token: string) =>
  fetch(`${service.url}/api/v1/user`, { headers: { authorization: `Bearer ${token}` } });

describe('authorization code flow with PKCE (public client)', () => {
  it('discovers, registers, authorizes, exchanges, refreshes, revokes and introspects', async () => {
    const as = await discover(service);
    expect(as.issuer).toBe(service.config.baseUrl);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);

    const redirectUri = 'http://127.0.0.1:48213/callback';
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          client_name: 'Flow test agent',
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token'],
          token_endpoint_auth_method: 'none',
        },
        insecure,
      ),
    );
    expect(registered.client_secret).toBeUndefined();
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };

    // Authorize for the REST API resource through the sign-in and consent pages.
    const api = resourceFor('rest', service.config.baseUrl);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      scope: 'user:read project:read project:write',
      resource: api,
    }).toString();
    const jar = new CookieJar();
    const handle = uniqueHandle('flow');
    const { callback, pages } = await runAuthorization(service, jar, url.toString(), redirectUri, {
      handle,
      create: true,
    });
    expect(pages[0]).toContain('Sign in to continue to <bdi>Flow test agent</bdi>');
    expect(pages[1]).toContain('Allow <strong><bdi>Flow test agent</bdi></strong>');
    expect(pages[1]).toContain('Create or update projects');

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, codeVerifier, {
        additionalParameters: { resource: api },
        ...insecure,
      }),
    );
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBeGreaterThan(0);
    expect(tokens.scope?.split(' ').sort()).toEqual(['project:read', 'project:write', 'user:read']);
    expect(tokens.refresh_token).toBeTruthy();

    // The pipeline's verifier accepts it, with the token's scopes and audience.
    const caller = await verifier.oauth.verifyAccessToken(tokens.access_token);
    expect(caller?.credential).toMatchObject({ kind: 'oauth', clientId: client.client_id, audience: api });
    expect([...(caller?.scopes ?? [])].sort()).toEqual(['project:read', 'project:write', 'user:read']);

    // The REST API accepts it over HTTP and acts for the signed-in user.
    const me = await callApi(tokens.access_token);
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ handle });
    expect(await verifier.oauth.verifierFor('rest')(tokens.access_token)).not.toBeNull();
    expect(await verifier.oauth.verifierFor('mcp')(tokens.access_token)).toBeNull();

    // Refresh rotates the refresh token and issues a new access token for the same resource.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect((await verifier.oauth.verifyAccessToken(refreshed.access_token))?.credential).toMatchObject({
      audience: api,
    });

    // Revoke the new access token: introspection says inactive and the verifier refuses it.
    expect((await verifier.oauth.verifyAccessToken(refreshed.access_token))?.userId).toBeTruthy();
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.access_token, insecure),
    );
    const introspection = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, oauth.None(), refreshed.access_token, insecure),
    );
    expect(introspection.active).toBe(false);
    expect(await verifier.oauth.verifyAccessToken(refreshed.access_token)).toBeNull();
    const refused = await callApi(refreshed.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('resource_metadata=');

    // Revoking the refresh token ends the grant: the first access token dies with it.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure),
    );
    expect(await verifier.oauth.verifyAccessToken(tokens.access_token)).toBeNull();
  });
});
