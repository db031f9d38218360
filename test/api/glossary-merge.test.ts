// Editing glossary entries by term with `merge`: an agent that adds one translation to an entry sends the
// term and that translation, and the entry keeps its definition, flags and other translations (without
// `merge` the entry is replaced whole, as the operation always did).
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { modernClient } from '../mcp/helpers.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada } = useUsers(service, 'ada');

const stored = {
  term: 'workspace',
  definition: 'A group of projects',
  doNotTranslate: false,
  forbidden: true,
  caseSensitive: true,
  translations: { de: 'Arbeitsbereich', fr: 'espace de travail' },
};

async function entryOf(term: string) {
  const got = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
  return got.data!.entries.find((entry) => entry.term === term);
}

describe('glossary edits by term with merge', () => {
  it('change only the fields sent, translations by locale, and add new entries whole', async () => {
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: { entries: [stored] } });
    const merged = await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: {
        merge: true,
        entries: [
          { term: 'workspace', translations: { ja: 'ワークスペース', de: 'Arbeitsplatz' } },
          { term: 'project', definition: 'A thing to translate' },
        ],
      },
    });
    expect(merged.response.status).toBe(201);
    expect(merged.data).toMatchObject({ updated: ['workspace'], added: ['project'] });
    expect(await entryOf('workspace')).toEqual({
      ...stored,
      translations: { de: 'Arbeitsplatz', fr: 'espace de travail', ja: 'ワークスペース' },
    });
    expect(await entryOf('project')).toEqual({
      term: 'project',
      definition: 'A thing to translate',
      caseSensitive: false,
      doNotTranslate: false,
      forbidden: false,
      translations: {},
    });

    // A flag sent as false is a change too; a definition sent as empty clears it.
    await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { merge: true, entries: [{ term: 'workspace', forbidden: false, definition: '' }] },
    });
    expect(await entryOf('workspace')).toMatchObject({
      forbidden: false,
      caseSensitive: true,
      definition: '',
    });

    // Without merge, the entry is replaced whole, as before.
    await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { entries: [{ term: 'workspace', translations: { it: 'area di lavoro' } }] },
    });
    expect(await entryOf('workspace')).toEqual({
      term: 'workspace',
      definition: '',
      caseSensitive: false,
      doNotTranslate: false,
      forbidden: false,
      translations: { it: 'area di lavoro' },
    });
  });

  it('refuse an entry whose merged translations would be more than an entry holds, saving nothing', async () => {
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`de-x-a${i}`, `t${i}`]));
    const more = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`fr-x-b${i}`, `u${i}`]));
    await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'ada' },
      body: { entries: [{ term: 'crowded', translations: many }] },
    });
    const before = (await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!.version;
    const refused = await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { merge: true, entries: [{ term: 'crowded', translations: more }] },
    });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ errors: [{ pointer: '/body/entries/0/translations' }] });
    expect((await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!.version).toBe(
      before,
    );
  });

  it('keep the term as stored when the request names it in another Unicode form', async () => {
    const composed = 'caf\u00e9';
    await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'ada' },
      body: { entries: [{ term: composed }] },
    });
    const merged = await sdk.upsertGlossaryEntries({
      client: ada.client,
      path: { account: 'ada' },
      body: { merge: true, entries: [{ term: 'cafe\u0301', translations: { de: 'Caf\u00e9' } }] },
    });
    expect(merged.data!.updated).toEqual([composed]);
    const got = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
    expect(got.data!.entries).toEqual([
      expect.objectContaining({ term: composed, translations: { de: 'Caf\u00e9' } }),
    ]);
  });

  it('save no version when every entry sent is as stored, and answer with the current one (200)', async () => {
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: { entries: [stored] } });
    const before = (await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!;
    // An agent's retry of a merge that went through, and the whole entry sent as it is.
    for (const body of [
      { merge: true, entries: [{ term: 'workspace', translations: { de: 'Arbeitsbereich' } }] },
      { entries: [stored] },
    ]) {
      const again = await sdk.upsertGlossaryEntries({ client: ada.client, path: { account: 'ada' }, body });
      expect(again.response.status).toBe(200);
      expect(again.data).toMatchObject({
        version: before.version,
        etag: before.etag,
        added: [],
        updated: [],
      });
    }
    expect((await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!.version).toBe(
      before.version,
    );
  });

  it('answer a retry sent with the If-Match of before its first try as done (200), and refuse a stale change (412)', async () => {
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: { entries: [stored] } });
    const read = (await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!;
    type Merge = { merge: boolean; entries: { term: string; translations: Record<string, string> }[] };
    const merge: Merge = {
      merge: true,
      entries: [{ term: 'workspace', translations: { ja: 'ワークスペース' } }],
    };
    const send = (body: Merge) =>
      sdk.upsertGlossaryEntries({
        client: ada.client,
        path: { account: 'ada' },
        headers: { 'If-Match': read.etag },
        body,
      });
    const first = await send(merge);
    expect(first.response.status).toBe(201);
    // The answer was lost; the agent sends the same edit with the same If-Match.
    const retry = await send(merge);
    expect(retry.response.status).toBe(200);
    expect(retry.data).toMatchObject({ version: first.data!.version, etag: first.data!.etag, updated: [] });
    // With that stale If-Match, an edit the glossary does not hold yet changes nothing.
    const stale = await send({
      merge: true,
      entries: [{ term: 'workspace', translations: { ko: '작업 공간' } }],
    });
    expect(stale.response.status).toBe(412);
    // Nor does one the glossary would refuse anyway (202 translations once merged): the precondition is
    // what it is told.
    const refused = await send({
      merge: true,
      entries: [
        {
          term: 'workspace',
          translations: Object.fromEntries([...Array(199)].map((_, i) => [`de-x-a${i}`, 'x'])),
        },
      ],
    });
    expect(refused.response.status).toBe(412);
    const now = (await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } })).data!;
    expect(now.version).toBe(first.data!.version);
    expect(now.entries[0]!.translations).toEqual({ ...stored.translations, ja: 'ワークスペース' });
  });

  it('take merge over MCP', async () => {
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: { entries: [stored] } });
    const mcp = await modernClient(service, ada.token);
    try {
      const result = await mcp.callTool({
        name: 'upsert_glossary_entries',
        arguments: {
          account: 'ada',
          merge: true,
          entries: [{ term: 'workspace', translations: { es: 'espacio' } }],
        },
      });
      expect(result.isError).toBeFalsy();
    } finally {
      await mcp.close();
    }
    expect((await entryOf('workspace'))!.translations).toEqual({ ...stored.translations, es: 'espacio' });
    expect((await entryOf('workspace'))!.definition).toBe(stored.definition);
  });
});
