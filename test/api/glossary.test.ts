import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { tagPattern } from '../support/etag.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');

beforeAll(async () => {
  await createTestOrganization(service, 'acme', ada, { members: [bob] });
  await createTestOrganization(service, 'openco', ada, { visibility: 'public' });
});

async function history(user: TestUser, account: string) {
  const list = await sdk.listGlossaryVersions({
    client: user.client,
    path: { account },
    query: { limit: 100 },
  });
  expect(list.response.status).toBe(200);
  return list.data!.items;
}

async function settings(user: TestUser, account: string) {
  const got = await sdk.getGlossarySettings({ client: user.client, path: { account } });
  expect(got.response.status).toBe(200);
  expect(got.response.headers.get('etag')).toBe(got.data!.etag);
  return got.data!;
}

function pointers(error: unknown): string[] {
  return (error as { errors?: { pointer: string }[] }).errors?.map((e) => e.pointer) ?? [];
}

const entry = (term: string) => ({
  term,
  definition: '',
  caseSensitive: false,
  doNotTranslate: false,
  forbidden: false,
  translations: {},
});

describe('glossary versions through the generated SDK', () => {
  it('saves two versions and reads the history, each version readable by number', async () => {
    const none = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
    expect(none.response.status).toBe(404);
    expect((none.error as { detail: string }).detail).toContain('No glossary has been saved for "ada" yet');

    const first = await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'ada' },
      body: {
        changeNote: 'first terms',
        entries: [
          { term: 'Acme Cloud', caseSensitive: true, doNotTranslate: true },
          {
            term: 'workspace',
            definition: 'A group of projects',
            translations: { de: 'Arbeitsbereich', 'fr-ca': 'espace' },
          },
        ],
      },
    });
    expect(first.response.status).toBe(201);
    const firstTag = first.response.headers.get('etag')!;
    expect(firstTag).toMatch(tagPattern('v', 1));
    expect(first.data).toMatchObject({
      version: 1,
      etag: firstTag,
      author: 'ada',
      changeNote: 'first terms',
    });
    expect(first.data!.entries[1]!.translations).toEqual({ de: 'Arbeitsbereich', 'fr-CA': 'espace' });

    const second = await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'ada' },
      headers: { 'If-Match': firstTag },
      body: {
        changeNote: 'reordered, one more',
        entries: [{ term: 'workspace' }, { term: 'project' }, { term: 'Acme Cloud', forbidden: true }],
      },
    });
    expect(second.response.status).toBe(201);
    expect(second.response.headers.get('etag')).toMatch(tagPattern('v', 2));

    expect(await history(ada, 'ada')).toEqual([
      { version: 1, changeNote: 'first terms', entryCount: 2, author: 'ada', createdAt: expect.any(String) },
      {
        version: 2,
        changeNote: 'reordered, one more',
        entryCount: 3,
        author: 'ada',
        createdAt: expect.any(String),
      },
    ]);

    const current = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
    expect(current.response.headers.get('etag')).toBe(second.response.headers.get('etag'));
    expect(current.data!.entries).toEqual([
      entry('workspace'),
      entry('project'),
      { ...entry('Acme Cloud'), forbidden: true },
    ]);

    const v1 = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' }, query: { version: 1 } });
    expect(v1.response.headers.get('etag')).toBe(firstTag);
    expect(v1.data!.entries).toEqual([
      { ...entry('Acme Cloud'), caseSensitive: true, doNotTranslate: true },
      {
        ...entry('workspace'),
        definition: 'A group of projects',
        translations: { de: 'Arbeitsbereich', 'fr-CA': 'espace' },
      },
    ]);
    const missing = await sdk.getGlossary({
      client: ada.client,
      path: { account: 'ada' },
      query: { version: 3 },
    });
    expect(missing.response.status).toBe(404);
  });

  it('refuses a save with a stale If-Match with 412 and saves nothing', async () => {
    const user = await createTestUser(service, 'stale-glossary');
    const account = 'stale-glossary';
    for (const term of ['one', 'two']) {
      const saved = await sdk.saveGlossary({
        client: user.client,
        path: { account },
        body: { entries: [{ term }] },
      });
      expect(saved.response.status).toBe(201);
    }
    const stale = await sdk.saveGlossary({
      client: user.client,
      path: { account },
      headers: { 'If-Match': '"v1"' },
      body: { entries: [{ term: 'lost' }] },
    });
    expect(stale.response.status).toBe(412);
    expect(await history(user, account)).toHaveLength(2);
    const current = await sdk.getGlossary({ client: user.client, path: { account } });
    expect(current.data!.entries.map((e) => e.term)).toEqual(['two']);
  });

  it('lets exactly one of two concurrent saves with the same If-Match win', async () => {
    const user = await createTestUser(service, 'glossary-racer');
    const account = 'glossary-racer';
    const base = await sdk.saveGlossary({ client: user.client, path: { account }, body: { entries: [] } });
    const etag = base.response.headers.get('etag')!;
    const results = await Promise.all(
      ['left', 'right'].map((term) =>
        sdk.saveGlossary({
          client: user.client,
          path: { account },
          headers: { 'If-Match': etag },
          body: { entries: [{ term }] },
        }),
      ),
    );
    const statuses = results.map((r) => r.response.status).sort();
    expect(statuses[0]).toBe(201);
    expect([409, 412]).toContain(statuses[1]);
    expect(await history(user, account)).toHaveLength(2);
    const winner = results.find((r) => r.response.status === 201)!;
    const current = await sdk.getGlossary({ client: user.client, path: { account } });
    expect(current.data!.entries).toEqual(winner.data!.entries);
  });

  it('rejects invalid glossaries with 400 and a pointer, and saves nothing', async () => {
    const before = await history(ada, 'ada');
    const cases: [unknown, string][] = [
      [{ entries: [{ term: 'a' }, { term: 'b' }, { term: 'a' }] }, '/body/entries/2/term'],
      [
        { entries: [{ term: 'a', translations: { 'not a locale': 'x' } }] },
        '/body/entries/0/translations/not a locale',
      ],
      [
        { entries: [{ term: 'a', translations: { 'de-ch': 'x', 'de-CH': 'y' } }] },
        '/body/entries/0/translations/de-CH',
      ],
      [{ entries: [{ term: 'padded ' }] }, '/body/entries/0/term'],
      [{ entries: [{ term: '' }] }, '/body/entries/0/term'],
      [{ entries: [{ definition: 'no term' }] }, '/body/entries/0/term'],
      [{ entries: Array.from({ length: 5001 }, (_, i) => ({ term: `t${i}` })) }, '/body/entries'],
      [{ changeNote: 'no entries' }, '/body/entries'],
    ];
    for (const [body, pointer] of cases) {
      const bad = await sdk.saveGlossary({
        client: ada.client,
        path: { account: 'ada' },
        body: body as never,
      });
      expect(bad.response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(pointers(bad.error)).toContain(pointer);
    }
    expect(await history(ada, 'ada')).toEqual(before);
  });

  it('takes a term in another Unicode form (NFC or NFD) as the same term when saving, editing and removing', async () => {
    // "café" with a precomposed é and with e + U+0301 look the same and mean the same: a glossary listing
    // both has two conflicting entries for one term, and an edit from a client that decomposes (macOS
    // file names, some keyboards) would add a look-alike instead of changing the entry.
    const composed = 'caf\u00e9';
    const decomposed = 'cafe\u0301';
    const account = { account: 'bob' };
    const twice = await sdk.saveGlossary({
      client: bob.client,
      path: account,
      body: { entries: [{ term: composed }, { term: 'tea' }, { term: decomposed }] },
    });
    expect(twice.response.status).toBe(400);
    expect(pointers(twice.error)).toEqual(['/body/entries/2/term']);

    const saved = await sdk.saveGlossary({
      client: bob.client,
      path: account,
      body: { entries: [{ term: composed, definition: 'coffee house' }, { term: 'tea' }] },
    });
    expect(saved.response.status).toBe(201);

    const edited = await sdk.upsertGlossaryEntries({
      client: bob.client,
      path: account,
      headers: { 'If-Match': saved.data!.etag },
      body: { entries: [{ term: decomposed, definition: 'a small restaurant' }] },
    });
    expect(edited.response.status).toBe(201);
    expect(edited.data).toMatchObject({ added: [], updated: [decomposed], entryCount: 2 });
    const afterEdit = await sdk.getGlossary({ client: bob.client, path: account });
    expect(afterEdit.data!.entries.map((e) => [e.term, e.definition])).toEqual([
      [decomposed, 'a small restaurant'],
      ['tea', ''],
    ]);

    const removed = await sdk.removeGlossaryEntries({
      client: bob.client,
      path: account,
      headers: { 'If-Match': edited.data!.etag },
      body: { terms: [composed] },
    });
    expect(removed.response.status).toBe(201);
    // Reported as the glossary held it (the edit above stored the decomposed form).
    expect(removed.data).toMatchObject({ removed: [decomposed], entryCount: 1 });
    const afterRemove = await sdk.getGlossary({ client: bob.client, path: account });
    expect(afterRemove.data!.entries.map((e) => e.term)).toEqual(['tea']);
  });

  it("hides another user's private glossary behind 404, for reads and writes", async () => {
    expect((await sdk.getGlossary({ client: bob.client, path: { account: 'ada' } })).response.status).toBe(
      404,
    );
    expect(
      (await sdk.listGlossaryVersions({ client: bob.client, path: { account: 'ada' } })).response.status,
    ).toBe(404);
    const write = await sdk.saveGlossary({
      client: bob.client,
      path: { account: 'ada' },
      body: { entries: [] },
    });
    expect(write.response.status).toBe(404);
    const settingsRead = await sdk.getGlossarySettings({ client: bob.client, path: { account: 'ada' } });
    expect(settingsRead.response.status).toBe(404);
  });

  it("keeps a public account's glossary private while its voice is readable", async () => {
    expect(
      (
        await sdk.saveGlossary({
          client: ada.client,
          path: { account: 'openco' },
          body: { entries: [{ term: 'x' }] },
        })
      ).response.status,
    ).toBe(201);
    expect(
      (await sdk.saveVoice({ client: ada.client, path: { account: 'openco' }, body: { tone: 'Open' } }))
        .response.status,
    ).toBe(201);
    expect((await sdk.getVoice({ client: bob.client, path: { account: 'openco' } })).response.status).toBe(
      200,
    );
    expect((await sdk.getGlossary({ client: bob.client, path: { account: 'openco' } })).response.status).toBe(
      404,
    );
    expect(
      (await sdk.getGlossarySettings({ client: bob.client, path: { account: 'openco' } })).response.status,
    ).toBe(404);
  });

  it('lets organization members read the glossary but not save it', async () => {
    const saved = await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'acme' },
      body: { entries: [] },
    });
    expect(saved.response.status).toBe(201);
    expect((await sdk.getGlossary({ client: bob.client, path: { account: 'acme' } })).response.status).toBe(
      200,
    );
    const write = await sdk.saveGlossary({
      client: bob.client,
      path: { account: 'acme' },
      body: { entries: [] },
    });
    expect(write.response.status).toBe(403);
    expect(await history(ada, 'acme')).toHaveLength(1);
  });

  it('answers 403 insufficient_scope to a token without glossary:write', async () => {
    const reader = await createTestUser(service, 'glossary-reader', ['glossary:read']);
    const denied = await sdk.saveGlossary({
      client: reader.client,
      path: { account: 'glossary-reader' },
      body: { entries: [] },
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain('scope="glossary:write"');
    expect(await history(reader, 'glossary-reader')).toEqual([]);
  });
});

describe('glossary settings through the generated SDK', () => {
  it('reads the defaults at revision 0 until the first update, then counts revisions', async () => {
    const user = await createTestUser(service, 'settings-user');
    const account = 'settings-user';
    const defaults = await settings(user, account);
    expect(defaults).toEqual({
      enforcementMode: 'warn',
      revision: 0,
      etag: expect.stringMatching(tagPattern('r', 0)),
      updatedAt: null,
      updatedBy: null,
    });
    const first = await sdk.updateGlossarySettings({
      client: user.client,
      path: { account },
      headers: { 'If-Match': defaults.etag },
      body: { enforcementMode: 'strict' },
    });
    expect(first.response.status).toBe(200);
    expect(first.response.headers.get('etag')).toMatch(tagPattern('r', 1));
    expect(first.data).toMatchObject({ enforcementMode: 'strict', revision: 1, updatedBy: 'settings-user' });

    const blind = await sdk.updateGlossarySettings({
      client: user.client,
      path: { account },
      body: { enforcementMode: 'off' },
    });
    expect(blind.data).toMatchObject({
      enforcementMode: 'off',
      revision: 2,
      etag: expect.stringMatching(tagPattern('r', 2)),
    });
    expect(await settings(user, account)).toMatchObject({ enforcementMode: 'off', revision: 2 });
  });

  it('refuses an update with a stale If-Match with 412 and changes nothing', async () => {
    const before = await settings(ada, 'acme');
    expect(before.revision).toBe(1);
    const updated = await sdk.updateGlossarySettings({
      client: ada.client,
      path: { account: 'acme' },
      headers: { 'If-Match': before.etag },
      body: { enforcementMode: 'strict' },
    });
    expect(updated.response.status).toBe(200);
    const stale = await sdk.updateGlossarySettings({
      client: ada.client,
      path: { account: 'acme' },
      headers: { 'If-Match': before.etag },
      body: { enforcementMode: 'off' },
    });
    expect(stale.response.status).toBe(412);
    expect(await settings(ada, 'acme')).toMatchObject({ enforcementMode: 'strict', revision: 2 });
  });

  it('lets exactly one of two concurrent updates with the same If-Match win', async () => {
    const before = await settings(ada, 'openco');
    const results = await Promise.all(
      (['off', 'strict'] as const).map((enforcementMode) =>
        sdk.updateGlossarySettings({
          client: ada.client,
          path: { account: 'openco' },
          headers: { 'If-Match': before.etag },
          body: { enforcementMode },
        }),
      ),
    );
    const statuses = results.map((r) => r.response.status).sort();
    expect(statuses).toEqual([200, 412]);
    const winner = results.find((r) => r.response.status === 200)!;
    expect(await settings(ada, 'openco')).toMatchObject({
      enforcementMode: winner.data!.enforcementMode,
      revision: before.revision + 1,
    });
  });

  it('rejects an invalid mode with 400 and a pointer, and changes nothing', async () => {
    const before = await settings(ada, 'ada');
    const bad = await sdk.updateGlossarySettings({
      client: ada.client,
      path: { account: 'ada' },
      body: { enforcementMode: 'lenient' } as never,
    });
    expect(bad.response.status).toBe(400);
    expect(pointers(bad.error)).toContain('/body/enforcementMode');
    expect(await settings(ada, 'ada')).toEqual(before);
  });

  it('needs glossary:admin: members and tokens without the scope get 403', async () => {
    const member = await sdk.updateGlossarySettings({
      client: bob.client,
      path: { account: 'acme' },
      body: { enforcementMode: 'off' },
    });
    expect(member.response.status).toBe(403);
    expect((await settings(bob, 'acme')).enforcementMode).not.toBe('off');

    const writer = await createTestUser(service, 'glossary-writer', ['glossary:read', 'glossary:write']);
    const denied = await sdk.updateGlossarySettings({
      client: writer.client,
      path: { account: 'glossary-writer' },
      body: { enforcementMode: 'off' },
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain('scope="glossary:admin"');
    expect((await settings(writer, 'glossary-writer')).revision).toBe(0);
  });
});
