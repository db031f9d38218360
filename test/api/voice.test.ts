import { beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { tagPattern } from '../support/etag.ts';
import { createTestOrganization, createTestUser, type TestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService();
const db = useDatabaseClient(service);
const { ada, bob } = useUsers(service, 'ada', 'bob');

beforeAll(async () => {
  await createTestOrganization(service, 'acme', ada, { members: [bob] });
  await createTestOrganization(service, 'openco', ada, { visibility: 'public' });
});

async function history(user: TestUser, account: string) {
  const list = await sdk.listVoiceVersions({ client: user.client, path: { account }, query: { limit: 100 } });
  expect(list.response.status).toBe(200);
  return list.data!.items;
}

function pointers(error: unknown): string[] {
  return (error as { errors?: { pointer: string }[] }).errors?.map((e) => e.pointer) ?? [];
}

describe('voice through the generated SDK', () => {
  it('saves versions, reads the current one and any earlier one, and lists the history in order', async () => {
    const none = await sdk.getVoice({ client: ada.client, path: { account: 'ada' } });
    expect(none.response.status).toBe(404);
    expect((none.error as { detail: string }).detail).toContain('No voice has been saved for "ada" yet');

    const first = await sdk.saveVoice({
      client: ada.client,
      path: { account: 'ada' },
      body: {
        tone: 'Friendly',
        formality: 'informal',
        targetCountries: ['DE', 'CH'],
        guidelines: '# Rules\n\nUse *you*.',
        localeOverrides: { 'de-ch': { formality: 'formal', targetCountries: ['CH'] } },
        changeNote: 'first',
      },
    });
    expect(first.response.status).toBe(201);
    const v1 = first.response.headers.get('etag')!;
    expect(v1).toMatch(tagPattern('v', 1));
    expect(first.response.headers.get('location')).toBe('/api/v1/accounts/ada/voice?version=1');
    expect(first.data).toMatchObject({
      version: 1,
      etag: v1,
      formality: 'informal',
      targetAudience: '',
      localeOverrides: { 'de-CH': { formality: 'formal', targetCountries: ['CH'] } },
      author: 'ada',
    });

    const second = await sdk.saveVoice({
      client: ada.client,
      path: { account: 'ada' },
      headers: { 'If-Match': v1 },
      body: { tone: 'Direct', changeNote: 'second' },
    });
    expect(second.response.status).toBe(201);
    expect(second.data).toMatchObject({
      version: 2,
      tone: 'Direct',
      formality: 'neutral',
      targetCountries: [],
    });

    const current = await sdk.getVoice({ client: ada.client, path: { account: 'ada' } });
    expect(current.response.headers.get('etag')).toMatch(tagPattern('v', 2));
    expect(current.data).toMatchObject({ version: 2, tone: 'Direct', changeNote: 'second' });

    const earlier = await sdk.getVoice({
      client: ada.client,
      path: { account: 'ada' },
      query: { version: 1 },
    });
    expect(earlier.response.headers.get('etag')).toBe(v1);
    expect(earlier.data).toMatchObject({ version: 1, tone: 'Friendly', guidelines: '# Rules\n\nUse *you*.' });
    // A read shows the version exactly as its save answered it, every field.
    expect(earlier.data).toEqual(first.data);
    expect(current.data).toEqual(second.data);

    const missing = await sdk.getVoice({
      client: ada.client,
      path: { account: 'ada' },
      query: { version: 9 },
    });
    expect(missing.response.status).toBe(404);

    expect(await history(ada, 'ada')).toEqual([
      { version: 1, changeNote: 'first', author: 'ada', createdAt: expect.any(String) },
      { version: 2, changeNote: 'second', author: 'ada', createdAt: expect.any(String) },
    ]);
    const { rows } = await db.query(
      `select count(*)::int as n from audit_events where action = 'voice.save' and details->>'version' = '2'`,
    );
    expect(rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it('pages through the history with a cursor, oldest first', async () => {
    const saves = [];
    for (const note of ['a', 'b', 'c']) {
      const saved = await sdk.saveVoice({
        client: ada.client,
        path: { account: 'acme' },
        body: { changeNote: note },
      });
      expect(saved.response.status).toBe(201);
      saves.push(saved.data!);
    }
    // The history reads plain rows, a save answers from its entity: each item says what the save said.
    const listed = await history(ada, 'acme');
    for (const { version, changeNote, author, createdAt } of saves) {
      expect(listed.find((item) => item.version === version)).toEqual({
        version,
        changeNote,
        author,
        createdAt,
      });
    }
    const seen: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await sdk.listVoiceVersions({
        client: ada.client,
        path: { account: 'acme' },
        query: { limit: 2, cursor },
      });
      expect(page.data!.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.data!.items.map((item) => item.version));
      cursor = page.data!.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([1, 2, 3]);
  });

  it('refuses a save with a stale If-Match with 412 and saves nothing', async () => {
    const before = await history(ada, 'ada');
    const stale = await sdk.saveVoice({
      client: ada.client,
      path: { account: 'ada' },
      headers: { 'If-Match': '"v1"' },
      body: { tone: 'Overwritten' },
    });
    expect(stale.response.status).toBe(412);
    expect(await history(ada, 'ada')).toEqual(before);
    const current = await sdk.getVoice({ client: ada.client, path: { account: 'ada' } });
    expect(current.data?.tone).not.toBe('Overwritten');

    const nothingYet = await sdk.saveVoice({
      client: bob.client,
      path: { account: 'bob' },
      headers: { 'If-Match': '"v1"' },
      body: { tone: 'x' },
    });
    expect(nothingYet.response.status).toBe(412);
    expect(await history(bob, 'bob')).toEqual([]);
  });

  it('lets exactly one of two concurrent saves with the same If-Match win', async () => {
    const racer = await createTestUser(service, 'voice-racer');
    const base = await sdk.saveVoice({ client: racer.client, path: { account: 'voice-racer' }, body: {} });
    expect(base.response.status).toBe(201);
    const etag = base.response.headers.get('etag')!;
    const results = await Promise.all(
      ['left', 'right'].map((tone) =>
        sdk.saveVoice({
          client: racer.client,
          path: { account: 'voice-racer' },
          headers: { 'If-Match': etag },
          body: { tone },
        }),
      ),
    );
    const statuses = results.map((r) => r.response.status).sort();
    expect(statuses[0]).toBe(201);
    expect([409, 412]).toContain(statuses[1]);
    expect(await history(racer, 'voice-racer')).toHaveLength(2);
    const winner = results.find((r) => r.response.status === 201)!;
    const current = await sdk.getVoice({ client: racer.client, path: { account: 'voice-racer' } });
    expect(current.data?.tone).toBe(winner.data?.tone);
  });

  it('never loses a save made without If-Match: racing saves get distinct versions or 409', async () => {
    const before = (await history(bob, 'bob')).length;
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        sdk.saveVoice({ client: bob.client, path: { account: 'bob' }, body: { tone: `t${n}` } }),
      ),
    );
    const saved = results.filter((r) => r.response.status === 201);
    for (const r of results) expect([201, 409]).toContain(r.response.status);
    expect(saved.length).toBeGreaterThanOrEqual(1);
    expect(new Set(saved.map((r) => r.data!.version)).size).toBe(saved.length);
    expect(await history(bob, 'bob')).toHaveLength(before + saved.length);
  });

  it('rejects invalid voices with 400 and a pointer, and saves nothing', async () => {
    const before = await history(ada, 'ada');
    const cases: [unknown, string][] = [
      [{ targetCountries: ['DE', 'XX'] }, '/body/targetCountries/1'],
      [{ targetCountries: ['de'] }, '/body/targetCountries/0'],
      [{ formality: 'casual' }, '/body/formality'],
      [{ guidelines: 'x'.repeat(20001) }, '/body/guidelines'],
      [{ localeOverrides: { 'not a locale': { tone: 'x' } } }, '/body/localeOverrides/not a locale'],
      [
        { localeOverrides: { 'de-ch': { tone: 'a' }, 'de-CH': { tone: 'b' } } },
        '/body/localeOverrides/de-CH',
      ],
      [
        { localeOverrides: { fr: { targetCountries: ['QQ'] } } },
        '/body/localeOverrides/fr/targetCountries/0',
      ],
      [{ colour: 'blue' }, '/body/colour'],
    ];
    for (const [body, pointer] of cases) {
      const bad = await sdk.saveVoice({ client: ada.client, path: { account: 'ada' }, body: body as never });
      expect(bad.response.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(pointers(bad.error)).toContain(pointer);
    }
    expect(await history(ada, 'ada')).toEqual(before);
  });

  it("hides another user's private voice behind 404, for reads and writes", async () => {
    const read = await sdk.getVoice({ client: bob.client, path: { account: 'ada' } });
    expect(read.response.status).toBe(404);
    const versions = await sdk.listVoiceVersions({ client: bob.client, path: { account: 'ada' } });
    expect(versions.response.status).toBe(404);
    const write = await sdk.saveVoice({ client: bob.client, path: { account: 'ada' }, body: { tone: 'x' } });
    expect(write.response.status).toBe(404);
  });

  it('lets organization members read the voice but not save it', async () => {
    const read = await sdk.getVoice({ client: bob.client, path: { account: 'acme' } });
    expect(read.response.status).toBe(200);
    const write = await sdk.saveVoice({ client: bob.client, path: { account: 'acme' }, body: { tone: 'x' } });
    expect(write.response.status).toBe(403);
  });

  it('answers 403 insufficient_scope to a token without voice:write', async () => {
    const reader = await createTestUser(service, 'voice-reader', ['voice:read']);
    const denied = await sdk.saveVoice({
      client: reader.client,
      path: { account: 'voice-reader' },
      body: {},
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain('scope="voice:write"');
    expect(await history(reader, 'voice-reader')).toEqual([]);
  });

  it("lets anyone signed in read a public account's voice, and nobody outside it save one", async () => {
    const saved = await sdk.saveVoice({
      client: ada.client,
      path: { account: 'openco' },
      body: { tone: 'Open' },
    });
    expect(saved.response.status).toBe(201);
    const read = await sdk.getVoice({ client: bob.client, path: { account: 'openco' } });
    expect(read.response.status).toBe(200);
    expect(read.data?.tone).toBe('Open');
    const write = await sdk.saveVoice({
      client: bob.client,
      path: { account: 'openco' },
      body: { tone: 'x' },
    });
    expect(write.response.status).toBe(403);
    expect(await history(ada, 'openco')).toHaveLength(1);
  });
});
