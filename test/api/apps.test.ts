import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { resourceFor } from '../../src/oauth/index.ts';
import { CookieJar, connectPublicClient } from '../oauth/helpers.ts';
import { createTestUser, sdkClient } from '../support/fixtures.ts';
import { useOAuthService, useUsers } from '../support/suite.ts';

const service = useOAuthService();
const { ada } = useUsers(service, 'ada');

/** Ada connects an OAuth app through sign-in and consent; returns its client id and access token. */
async function connectApp(name: string) {
  const resource = resourceFor('rest', service.config.baseUrl);
  const { client, tokens } = await connectPublicClient(
    service,
    new CookieJar(),
    { handle: 'ada' },
    { scope: 'project:read account:read', resource },
    { metadata: { client_name: name }, exchange: { resource } },
  );
  return { clientId: client.client_id as string, accessToken: tokens.access_token };
}

describe('connected OAuth apps', () => {
  it('lists the apps a user authorized, with their scopes, and disconnects one with all its tokens', async () => {
    const app = await connectApp('Notebook agent');
    const withOAuth = await sdk.listProjects({
      client: sdkClient(service, app.accessToken),
      path: { account: 'ada' },
    });
    expect(withOAuth.response.status).toBe(200);

    const listed = await sdk.listConnectedApps({ client: ada.client });
    expect(listed.response.status).toBe(200);
    const entry = listed.data!.items.find((a) => a.clientId === app.clientId);
    expect(entry).toMatchObject({ clientName: 'Notebook agent', scopes: ['account:read', 'project:read'] });

    const disconnected = await sdk.disconnectApp({ client: ada.client, path: { clientId: app.clientId } });
    expect(disconnected.response.status).toBe(204);
    const after = await sdk.listConnectedApps({ client: ada.client });
    expect(after.data!.items.map((a) => a.clientId)).not.toContain(app.clientId);

    const refused = await sdk.listProjects({
      client: sdkClient(service, app.accessToken),
      path: { account: 'ada' },
    });
    expect(refused.response.status).toBe(401);
  });

  it("answers 404 for an app the user never connected, and does not touch another user's apps", async () => {
    const app = await connectApp('Editor');
    const bob = await createTestUser(service, 'bob');
    const notBobs = await sdk.disconnectApp({ client: bob.client, path: { clientId: app.clientId } });
    expect(notBobs.response.status).toBe(404);
    const still = await sdk.listConnectedApps({ client: ada.client });
    expect(still.data!.items.map((a) => a.clientId)).toContain(app.clientId);
    expect((await sdk.listConnectedApps({ client: bob.client })).data!.items).toEqual([]);
  });

  it('needs apps:read to list and apps:write to disconnect', async () => {
    const reader = await createTestUser(service, 'reader', ['apps:read']);
    expect((await sdk.listConnectedApps({ client: reader.client })).response.status).toBe(200);
    const denied = await sdk.disconnectApp({ client: reader.client, path: { clientId: 'whatever' } });
    expect(denied.response.status).toBe(403);
  });
});
