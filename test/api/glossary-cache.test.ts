// A glossary version never changes once written, so an instance keeps the JSON text of the versions it has
// read (GLOSSARY_CACHE_MB) and answers a later read without the entries statement. What must hold: every
// read answers the version it names, for the account it names, whatever was read before it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { modernClient } from '../mcp/helpers.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const METRICS_TOKEN = randomBytes(32).toString('hex');
const service = useService(() => startTestService({ METRICS_TOKEN }));
const { ada, bob } = useUsers(service, 'ada', 'bob');
const db = useDatabaseClient(service);
let uncached: TestService;

beforeAll(async () => {
  uncached = await startTestService({ GLOSSARY_CACHE_MB: '0' }, { database: service.database });
});
afterAll(() => uncached?.close());

const glossaryOf = (word: string, count: number) => ({
  changeNote: word,
  entries: Array.from({ length: count }, (_, i) => ({
    term: `${word} ${i}`,
    definition: `What ${word} ${i} means`,
    translations: { de: `${word} ${i} (de)` },
  })),
});

const read = async (url: string, who: { token: string }, account: string, version?: number) => {
  const response = await fetch(
    `${url}/api/v1/accounts/${account}/glossary${version ? `?version=${version}` : ''}`,
    {
      headers: { authorization: `Bearer ${who.token}` },
    },
  );
  expect(response.status).toBe(200);
  return response.json() as Promise<{ version: number; changeNote: string; entries: { term: string }[] }>;
};

async function cacheReads(): Promise<{ hit: number; miss: number }> {
  const response = await fetch(`${service.url}/metrics`, {
    headers: { authorization: `Bearer ${METRICS_TOKEN}` },
  });
  const text = await response.text();
  const count = (result: string) =>
    Number(
      new RegExp(`^glossary_cache_reads_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0,
    );
  return { hit: count('hit'), miss: count('miss') };
}

describe('glossary reads from the version cache', () => {
  it('answer each account its own version, named or current, as an uncached instance does', async () => {
    for (const [who, account, words] of [
      [ada, 'ada', ['apple', 'apricot']],
      [bob, 'bob', ['banana']],
    ] as const) {
      for (const word of words) {
        const saved = await sdk.saveGlossary({
          client: who.client,
          path: { account },
          body: glossaryOf(word, 30),
        });
        expect(saved.response.status).toBe(201);
      }
    }
    // Twice each, interleaved, so the second round is answered from the cache.
    for (let round = 0; round < 2; round++) {
      for (const [who, account, version, word] of [
        [ada, 'ada', undefined, 'apricot'],
        [bob, 'bob', undefined, 'banana'],
        [ada, 'ada', 1, 'apple'],
        [ada, 'ada', 2, 'apricot'],
      ] as const) {
        const got = await read(service.url, who, account, version);
        expect(got.changeNote).toBe(word);
        expect(got.entries).toHaveLength(30);
        expect(got.entries.every((entry) => entry.term.startsWith(`${word} `))).toBe(true);
        expect(got).toEqual(await read(uncached.url, who, account, version));
      }
    }
    // A new version is read as itself, not as the version the cache holds for the account.
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: glossaryOf('avocado', 3) });
    expect((await read(service.url, ada, 'ada')).entries.map((entry) => entry.term)).toEqual([
      'avocado 0',
      'avocado 1',
      'avocado 2',
    ]);
  });

  it('answer a version read before without reading its entries again, over REST and MCP', async () => {
    await sdk.saveGlossary({ client: bob.client, path: { account: 'bob' }, body: glossaryOf('cherry', 5) });
    const before = await cacheReads();
    const first = await read(service.url, bob, 'bob');
    expect(first.entries).toHaveLength(5);
    expect(await cacheReads()).toEqual({ hit: before.hit, miss: before.miss + 1 });
    // Behind the API, the entries go; only an instance that kept the version's text still has them.
    await db.query(
      `delete from glossary_entries where glossary_version_id =
         (select v.id from glossary_versions v join accounts a on a.id = v.account_id
           where a.handle = 'bob' and v.version = $1)`,
      [first.version],
    );
    expect(await read(service.url, bob, 'bob')).toEqual(first);
    expect(await cacheReads()).toEqual({ hit: before.hit + 1, miss: before.miss + 1 });
    expect((await read(uncached.url, bob, 'bob')).entries).toEqual([]);

    const client = await modernClient(service, bob.token);
    try {
      const got = await client.callTool({ name: 'get_glossary', arguments: { account: 'bob' } });
      expect(got.structuredContent).toEqual(first);
    } finally {
      await client.close();
    }
  });
});
