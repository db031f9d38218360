import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { uniqueHandle } from '../oauth/helpers.ts';
import { createTestUser } from '../support/fixtures.ts';
import { useService, useUsers } from '../support/suite.ts';

// Editing a large glossary by term: one entry sent, not 5,000; the same If-Match/412 rule as a whole save;
// and a search that pages through every entry of a version.

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');

const SIZE = 5000;
const termOf = (i: number) => `term-${String(i).padStart(4, '0')}`;

beforeAll(async () => {
  const saved = await sdk.saveGlossary({
    client: ada.client,
    path: { account: 'ada' },
    body: {
      changeNote: 'the big one',
      entries: Array.from({ length: SIZE }, (_, i) => ({
        term: termOf(i),
        doNotTranslate: i % 10 === 0,
        forbidden: i % 25 === 0,
        ...(i % 2 === 0 ? { translations: { de: `Begriff ${i}` } } : {}),
      })),
    },
  });
  expect(saved.response.status).toBe(201);
}, 60_000);

async function current() {
  const got = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
  expect(got.response.status).toBe(200);
  return got.data!;
}

function patchEntries(body: unknown, ifMatch?: string) {
  const json = JSON.stringify(body);
  return {
    size: Buffer.byteLength(json),
    response: fetch(`${service.url}/api/v1/accounts/ada/glossary/entries`, {
      method: 'PATCH',
      headers: {
        Authorization: `Bearer ${ada.token}`,
        'Content-Type': 'application/json',
        ...(ifMatch ? { 'If-Match': ifMatch } : {}),
      },
      body: json,
    }),
  };
}

async function searchAll(query: Record<string, unknown>): Promise<string[]> {
  const terms: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 200; pages++) {
    const page = await sdk.searchGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      query: { ...query, limit: 100, ...(cursor ? { cursor } : {}) },
    });
    expect(page.response.status).toBe(200);
    terms.push(...page.data!.items.map((entry) => entry.term));
    if (!page.data!.nextCursor) return terms;
    cursor = page.data!.nextCursor;
  }
  throw new Error('the search never ended');
}

describe('glossary edits by term', () => {
  it('changes one term of a 5,000-entry glossary with a request under 1 KB', async () => {
    const before = await current();
    const { size, response } = patchEntries(
      {
        changeNote: 'German for term-0042',
        entries: [{ term: 'term-0042', definition: 'The answer', translations: { de: 'Antwort' } }],
      },
      before.etag,
    );
    expect(size).toBeLessThan(1024);
    const edited = await response;
    expect(edited.status).toBe(201);
    const body = await edited.json();
    expect(body).toMatchObject({
      version: before.version + 1,
      entryCount: SIZE,
      updated: ['term-0042'],
      added: [],
      removed: [],
      changeNote: 'German for term-0042',
      author: 'ada',
    });
    expect(edited.headers.get('etag')).toBe(body.etag);

    const after = await current();
    expect(after.version).toBe(before.version + 1);
    expect(after.entries).toHaveLength(SIZE);
    // Replaced where it stood; every other entry unchanged and in order.
    expect(after.entries[42]).toMatchObject({
      term: 'term-0042',
      definition: 'The answer',
      translations: { de: 'Antwort' },
    });
    expect(after.entries.map((e) => e.term)).toEqual(before.entries.map((e) => e.term));
    expect(after.entries.filter((_, i) => i !== 42)).toEqual(before.entries.filter((_, i) => i !== 42));
  });

  it('refuses to grow the glossary past 5,000 entries, and saves nothing', async () => {
    const before = await current();
    const { response } = patchEntries({ entries: [{ term: 'one too many' }] });
    const refused = await response;
    expect(refused.status).toBe(400);
    expect((await refused.json()).errors[0].pointer).toBe('/body/entries');
    expect((await current()).version).toBe(before.version);
  });

  it('reports an entry named twice in a removal, in two Unicode forms, as removed once', async () => {
    const owner = await createTestUser(service, uniqueHandle('grm'));
    const path = { account: owner.handle };
    const saved = await sdk.upsertGlossaryEntries({
      client: owner.client,
      path,
      body: { entries: [{ term: 'café' }, { term: 'tea' }] },
    });
    expect(saved.response.status).toBe(201);
    const removed = await sdk.removeGlossaryEntries({
      client: owner.client,
      path,
      body: { terms: ['café', 'cafe\u0301'] },
    });
    expect(removed.response.status).toBe(201);
    expect(removed.data).toMatchObject({ entryCount: 1, removed: ['café'] });
  });

  it('removes entries by term, refusing a term that is not there', async () => {
    const before = await current();
    const unknown = await sdk.removeGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { terms: ['term-0001', 'no such term'] },
    });
    expect(unknown.response.status).toBe(400);
    expect((unknown.error as { errors: { pointer: string }[] }).errors[0]!.pointer).toBe('/body/terms/1');
    expect((await current()).version).toBe(before.version);

    const removed = await sdk.removeGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      headers: { 'If-Match': before.etag },
      body: { terms: ['term-0001', 'term-0003'], changeNote: 'two fewer' },
    });
    expect(removed.response.status).toBe(201);
    expect(removed.data).toMatchObject({ entryCount: SIZE - 2, removed: ['term-0001', 'term-0003'] });
    const after = await current();
    expect(after.entries.map((e) => e.term)).toEqual(
      before.entries.map((e) => e.term).filter((t) => t !== 'term-0001' && t !== 'term-0003'),
    );

    const added = await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { entries: [{ term: 'Acme Cloud', doNotTranslate: true }] },
    });
    expect(added.response.status).toBe(201);
    expect(added.data).toMatchObject({ added: ['Acme Cloud'], updated: [], entryCount: SIZE - 1 });
    expect((await current()).entries.at(-1)!.term).toBe('Acme Cloud');
  });

  it('gives two agents editing different terms from the same version one success and one 412', async () => {
    const before = await current();
    const edit = (term: string) =>
      patchEntries({ entries: [{ term, definition: `edited ${term}` }] }, before.etag).response;

    // Sent together: whichever commits second finds its If-Match stale (or loses the race for the number).
    const statuses = (await Promise.all([edit('term-0100'), edit('term-0200')])).map((r) => r.status).sort();
    expect(statuses).toEqual([201, 412]);
    const after = await current();
    expect(after.version).toBe(before.version + 1);
    const edited = after.entries.filter((e) => e.definition.startsWith('edited '));
    expect(edited).toHaveLength(1);

    // And one after the other with the same stale tag: 412, nothing saved.
    const late = await edit('term-0300');
    expect(late.status).toBe(412);
    expect((await current()).version).toBe(after.version);
  });
});

describe('glossary search', () => {
  it('pages through every entry of the current version, in order', async () => {
    const glossary = await current();
    const terms = await searchAll({});
    expect(terms).toHaveLength(glossary.entries.length);
    expect(terms).toEqual(glossary.entries.map((e) => e.term));
  });

  it('filters by term prefix (ignoring case), locale, doNotTranslate and forbidden', async () => {
    const glossary = await current();
    const expectFilter = async (
      query: Record<string, unknown>,
      keep: (e: (typeof glossary.entries)[0]) => boolean,
    ) => {
      const terms = await searchAll(query);
      expect(terms, JSON.stringify(query)).toEqual(glossary.entries.filter(keep).map((e) => e.term));
      expect(terms.length, JSON.stringify(query)).toBeGreaterThan(0);
    };
    await expectFilter({ termPrefix: 'TERM-01' }, (e) => e.term.startsWith('term-01'));
    await expectFilter({ locale: 'DE' }, (e) => 'de' in e.translations);
    await expectFilter({ doNotTranslate: true }, (e) => e.doNotTranslate);
    await expectFilter({ forbidden: false }, (e) => !e.forbidden);
    await expectFilter(
      { doNotTranslate: true, forbidden: true, locale: 'de' },
      (e) => e.doNotTranslate && e.forbidden && 'de' in e.translations,
    );
    // LIKE wildcards in the prefix are literal.
    expect(await searchAll({ termPrefix: 'term_%' })).toEqual([]);
  });

  it('finds a term by a prefix in any case, beyond ASCII, the exact term included', async () => {
    // Lowered by PostgreSQL on both sides: JavaScript lowers a final capital sigma to ς and İ to i̇ where
    // PostgreSQL gives σ and i (and, under the "C" locale, leaves Ü as it is), so a prefix lowered in Node
    // missed the very term it was copied from.
    // The last one written with e + U+0301 (NFD): a prefix in either form finds it.
    const terms = ['ΟΔΟΣ', 'İstanbul', 'Über', 'Ǆemal', 'Cafe\u0301 au lait'];
    const saved = await sdk.saveGlossary({
      client: bob.client,
      path: { account: 'bob' },
      body: { entries: terms.map((term) => ({ term })) },
    });
    expect(saved.response.status).toBe(201);
    const search = async (termPrefix: string) => {
      const page = await sdk.searchGlossaryEntries({
        client: bob.client,
        path: { account: 'bob' },
        query: { termPrefix },
      });
      expect(page.response.status).toBe(200);
      return page.data!.items.map((entry) => entry.term);
    };
    for (const term of terms) expect(await search(term), term).toEqual([term]);
    // Which letters beyond ASCII fold depends on the database's locale (none under "C"); these hold in any.
    expect(await search('İSTANBUL')).toEqual(['İstanbul']);
    expect(await search('Üb')).toEqual(['Über']);
    expect(await search('café')).toEqual(['Cafe\u0301 au lait']);
    expect(await search('cafe\u0301 au')).toEqual(['Cafe\u0301 au lait']);
  });

  it('keeps paging through the version the first page read, and refuses a forged cursor', async () => {
    const first = await sdk.searchGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      query: { limit: 2 },
    });
    const version = first.data!.version;
    await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { entries: [{ term: first.data!.items[0]!.term, definition: 'meanwhile' }] },
    });
    const next = await sdk.searchGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      query: { limit: 2, cursor: first.data!.nextCursor! },
    });
    expect(next.data!.version).toBe(version);

    const forged = await sdk.searchGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      query: { cursor: 'bm90LWEtY3Vyc29y' },
    });
    expect(forged.response.status).toBe(400);
    // A cursor of the right shape that the service never hands out: version 0 (read as "the current
    // version" instead of a pinned one), or numbers written with leading zeros.
    for (const text of ['0.1', `0${version}.1`, `${version}.01`]) {
      const made = await sdk.searchGlossaryEntries({
        client: ada.client,
        path: { account: 'ada' },
        query: { cursor: Buffer.from(text).toString('base64url') },
      });
      expect(made.response.status, text).toBe(400);
      expect((made.error as { errors?: { pointer: string }[] }).errors?.map((e) => e.pointer)).toEqual([
        '/query/cursor',
      ]);
    }
  });

  it('refuses a cursor on another account or with other filters than the search that handed it out', async () => {
    const one = await createTestUser(service, uniqueHandle('gsa'));
    const two = await createTestUser(service, uniqueHandle('gsb'));
    for (const owner of [one, two]) {
      const saved = await sdk.upsertGlossaryEntries({
        client: owner.client,
        path: { account: owner.handle },
        body: { entries: ['zalpha', 'zalpine', 'zbeta'].map((term) => ({ term, definition: term })) },
      });
      expect(saved.response.status, JSON.stringify(saved.error)).toBe(201);
    }
    const search = (account: string, query: Record<string, unknown>) =>
      sdk.searchGlossaryEntries({ client: one.client, path: { account }, query: { limit: 1, ...query } });
    const first = await search(one.handle, { termPrefix: 'zal' });
    const cursor = first.data!.nextCursor!;
    // The same search goes on.
    expect((await search(one.handle, { termPrefix: 'zal', cursor })).data!.items.map((e) => e.term)).toEqual([
      'zalpine',
    ]);
    // Other filters on the same glossary: refused, not read as a page of a search nobody started.
    for (const [account, query] of [
      [one.handle, { termPrefix: 'zbe', cursor }],
      [one.handle, { cursor }],
      [one.handle, { termPrefix: 'zal', forbidden: false, cursor }],
    ] as const) {
      const refused = await search(account, query);
      expect(refused.response.status, JSON.stringify(query)).toBe(400);
      expect((refused.error as { errors?: { pointer: string }[] }).errors?.map((e) => e.pointer)).toEqual([
        '/query/cursor',
      ]);
    }
    // On another account's glossary (with its owner's token): refused too.
    const elsewhere = await sdk.searchGlossaryEntries({
      client: two.client,
      path: { account: two.handle },
      query: { termPrefix: 'zal', limit: 1, cursor },
    });
    expect(elsewhere.response.status).toBe(400);
  });
});
