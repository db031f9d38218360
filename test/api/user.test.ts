import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');

describe('the signed-in user through the generated SDK', () => {
  it('reads the caller, and an update answers what a read then shows', async () => {
    const before = await sdk.getCurrentUser({ client: ada.client });
    expect(before.response.status).toBe(200);
    expect(before.data).toMatchObject({ id: ada.userId, handle: 'ada' });
    expect(Date.parse(before.data!.createdAt)).not.toBeNaN();

    // The update reads the user back inside its own transaction: the answer already has the change.
    const updated = await sdk.updateCurrentUser({
      client: ada.client,
      body: { displayName: 'Ada Lovelace', email: 'Ada@Example.com' },
    });
    expect(updated.response.status).toBe(200);
    expect(updated.data).toEqual({ ...before.data, displayName: 'Ada Lovelace', email: 'ada@example.com' });
    expect((await sdk.getCurrentUser({ client: ada.client })).data).toEqual(updated.data);

    const cleared = await sdk.updateCurrentUser({ client: ada.client, body: { email: null } });
    expect(cleared.data).toEqual({ ...updated.data, email: null });
  });

  it('refuses an invalid update with 400 and changes nothing', async () => {
    const before = (await sdk.getCurrentUser({ client: bob.client })).data;
    for (const body of [{}, { displayName: '' }, { email: 'not an address' }, { handle: 'eve' }]) {
      const refused = await sdk.updateCurrentUser({ client: bob.client, body: body as never });
      expect(refused.response.status).toBe(400);
      expect(refused.response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect((await sdk.getCurrentUser({ client: bob.client })).data).toEqual(before);
  });
});
