// An account token created by an OAuth app belongs to the app's grant: it expires no later than the grant
// and stops working, and is listed as revoked, when the person disconnects the app or the grant is revoked.

import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { resourceFor } from '../../src/oauth/index.ts';
import { sdkClient } from '../support/fixtures.ts';
import { useOAuthService } from '../support/suite.ts';
import {
  CookieJar,
  connectPublicClient,
  pastRotationGrace,
  sql,
  tokenRequest,
  uniqueHandle,
} from './helpers.ts';

const service = useOAuthService();

/** A new user who connects a new app to the REST API; returns the app's tokens. */
async function connectApp(handle: string, jar: CookieJar, create: boolean) {
  const { client, tokens } = await connectPublicClient(
    service,
    jar,
    { handle, create },
    {
      scope: 'project:read token:read token:write apps:read apps:write',
      resource: resourceFor('rest', service.config.baseUrl),
    },
  );
  return { clientId: client.client_id, ...tokens };
}

async function mint(bearer: string, handle: string, name: string) {
  const created = await sdk.createToken({
    client: sdkClient(service, bearer),
    path: { account: handle },
    body: { name, scopes: ['project:read', 'token:write'] },
  });
  expect(created.response.status, JSON.stringify(created.error)).toBe(201);
  return created.data!;
}

const projectsStatus = async (bearer: string, handle: string) =>
  (await sdk.listProjects({ client: sdkClient(service, bearer), path: { account: handle } })).response.status;

describe('account tokens created by an OAuth app', () => {
  it('expire no later than the grant, and die with it when the app is disconnected', async () => {
    const handle = uniqueHandle('apt');
    const jar = new CookieJar();
    const app = await connectApp(handle, jar, true);
    const child = await mint(app.access_token, handle, 'made by the app');
    const grandchild = await mint(child.token, handle, 'made by its token');
    const [grant] = (await sql(
      service,
      `select expires_at from oidc_models where model = 'Grant' and payload->>'clientId' = $1`,
      [app.clientId],
    )) as { expires_at: Date }[];
    expect(Date.parse(child.expiresAt!)).toBeLessThanOrEqual(grant!.expires_at.getTime());
    // The grant lives a year: a 366-day token would outlive it.
    const tooLong = await sdk.createToken({
      client: sdkClient(service, app.access_token),
      path: { account: handle },
      body: { name: 'outlives the grant', scopes: ['project:read'], expiresInDays: 366 },
    });
    expect(tooLong.response.status).toBe(400);
    expect((tooLong.error as { errors: { pointer: string }[] }).errors[0]!.pointer).toBe(
      '/body/expiresInDays',
    );
    expect(await projectsStatus(child.token, handle)).toBe(200);
    expect(await projectsStatus(grandchild.token, handle)).toBe(200);

    // A token the person made elsewhere is not the app's and survives the disconnect.
    const other = await connectApp(handle, jar, false);
    const unrelated = await mint(other.access_token, handle, 'made by another app');

    // The connected-apps page says what disconnecting will take with it.
    const appsPage = await (await jar.fetch(`${service.url}/settings/apps`)).text();
    expect(appsPage).toContain('It created 2 account tokens; disconnecting revokes them too.');
    expect(appsPage).toContain('It created an account token; disconnecting revokes it too.');

    const disconnected = await sdk.disconnectApp({
      client: sdkClient(service, app.access_token),
      path: { clientId: app.clientId },
    });
    expect(disconnected.response.status).toBe(204);
    expect(await projectsStatus(child.token, handle)).toBe(401);
    expect(await projectsStatus(grandchild.token, handle)).toBe(401);
    expect(await projectsStatus(unrelated.token, handle)).toBe(200);

    const listed = await sdk.listTokens({
      client: sdkClient(service, other.access_token),
      path: { account: handle },
      query: { limit: 100 },
    });
    const status = Object.fromEntries(listed.data!.items.map((t) => [t.name, t.status]));
    expect(status).toMatchObject({
      'made by the app': 'revoked',
      'made by its token': 'revoked',
      'made by another app': 'active',
    });
  });

  it('die with the grant when a refresh-token replay revokes it', async () => {
    const handle = uniqueHandle('apr');
    const app = await connectApp(handle, new CookieJar(), true);
    const child = await mint(app.access_token, handle, 'made before the replay');
    expect(await projectsStatus(child.token, handle)).toBe(200);

    const refresh = () =>
      tokenRequest(service, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: app.refresh_token,
      });
    expect((await refresh()).status).toBe(200);
    await pastRotationGrace(service, app.clientId);
    expect((await refresh()).status).toBe(400);
    expect(await projectsStatus(child.token, handle)).toBe(401);
  });

  it('outlive the revocation of one access token of the app, as its refresh token and grant do', async () => {
    const handle = uniqueHandle('apv');
    const app = await connectApp(handle, new CookieJar(), true);
    const child = await mint(app.access_token, handle, 'made before a revocation');
    const refresh = (refreshToken: string) =>
      tokenRequest(service, {
        grant_type: 'refresh_token',
        client_id: app.clientId,
        refresh_token: refreshToken,
      });
    const second = (await (await refresh(app.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };

    // The app revokes the access token it no longer needs (RFC 7009): that token, and nothing else, ends.
    const revoked = await fetch(`${service.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: app.clientId,
        token: app.access_token,
        token_type_hint: 'access_token',
      }),
    });
    expect(revoked.status).toBe(200);
    expect(await projectsStatus(app.access_token, handle)).toBe(401);
    expect(await projectsStatus(second.access_token, handle)).toBe(200);
    expect(await projectsStatus(child.token, handle)).toBe(200);
    expect((await refresh(second.refresh_token)).status).toBe(200);
    const grants = await sql(
      service,
      `select 1 from oidc_models where model = 'Grant' and payload->>'clientId' = $1`,
      [app.clientId],
    );
    expect(grants).toHaveLength(1);
  });

  it('stop working when the grant is gone even if nothing marked them revoked', async () => {
    const handle = uniqueHandle('apg');
    const app = await connectApp(handle, new CookieJar(), true);
    const child = await mint(app.access_token, handle, 'orphan');
    // As the expiry sweep does: the grant row disappears, nothing else is touched.
    await sql(service, `delete from oidc_models where model = 'Grant' and payload->>'clientId' = $1`, [
      app.clientId,
    ]);
    expect(await projectsStatus(child.token, handle)).toBe(401);
  });
});
