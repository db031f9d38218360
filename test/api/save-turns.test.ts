// Saves of a voice or glossary history at the same moment take turns: without If-Match each is added on
// top of the one before (an edit by term applies to the entries as they are by then), and If-None-Match
// makes a first save that never replaces one made meanwhile. The bursts come from another process, as a
// script's or another person's would: requests from this test's own event loop never overlap enough.
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { modernClient, toolProblemOf } from '../mcp/helpers.ts';
import { burstFromAnotherProcess } from '../support/burst.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { useService } from '../support/suite.ts';

const service = useService();

const sendAtOnce = (
  user: TestUser,
  path: string,
  method: string,
  bodies: unknown[],
  headers: Record<string, string> = {},
) =>
  burstFromAnotherProcess(
    bodies.map((body) => ({
      url: `${service.url}/api/v1/accounts/${user.handle}/${path}`,
      method,
      headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    })),
  );

const glossaryVersions = async (user: TestUser) =>
  (
    await sdk.listGlossaryVersions({
      client: user.client,
      path: { account: user.handle },
      query: { limit: 100 },
    })
  ).data!.items;
const voiceVersions = async (user: TestUser) =>
  (
    await sdk.listVoiceVersions({
      client: user.client,
      path: { account: user.handle },
      query: { limit: 100 },
    })
  ).data!.items;

describe('saves at the same moment without If-Match', () => {
  it('edits of different terms all apply, each on top of the one before', async () => {
    const ada = await createTestUser(service, 'turn-terms');
    const terms = Array.from({ length: 10 }, (_, i) => `term ${i}`);
    // Six of ten such edits used to answer 409: each read the same version and raced for the next number.
    const answers = await sendAtOnce(
      ada,
      'glossary/entries',
      'PATCH',
      terms.map((term) => ({ entries: [{ term }] })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(201));
    const current = await sdk.getGlossary({ client: ada.client, path: { account: ada.handle } });
    expect(current.data!.version).toBe(10);
    expect(current.data!.entries.map((entry) => entry.term).sort()).toEqual([...terms].sort());
    expect((await glossaryVersions(ada)).map((version) => version.version)).toEqual(
      Array.from({ length: 10 }, (_, i) => i + 1),
    );
  });

  it('updates of the glossary settings all apply, each on top of the one before', async () => {
    const ada = await createTestUser(service, 'turn-settings');
    const modes = ['off', 'warn', 'strict', 'off', 'warn', 'strict'];
    // Five of six such updates answered 409: each read the same revision and raced to update it.
    const answers = await sendAtOnce(
      ada,
      'glossary/settings',
      'PUT',
      modes.map((enforcementMode) => ({ enforcementMode })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(200));
    const revisions = answers.map((answer) => (JSON.parse(answer.body) as { revision: number }).revision);
    expect(revisions.sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('whole saves all succeed as consecutive versions', async () => {
    const ada = await createTestUser(service, 'turn-voice');
    const tones = Array.from({ length: 8 }, (_, i) => `tone ${i}`);
    const answers = await sendAtOnce(
      ada,
      'voice',
      'PUT',
      tones.map((tone) => ({ tone })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(201));
    const saved = answers.map((answer) => JSON.parse(answer.body) as { version: number; tone: string });
    expect(saved.map((voice) => voice.version).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(await voiceVersions(ada)).toHaveLength(8);
  });
});

describe('If-None-Match on a save', () => {
  it('`*` saves a first version only: of first saves at once exactly one wins, the others get 412 and save nothing', async () => {
    for (const [path, method, bodyOf, versions] of [
      ['voice', 'PUT', (i: number) => ({ tone: `first ${i}` }), voiceVersions],
      ['glossary', 'PUT', (i: number) => ({ entries: [{ term: `first ${i}` }] }), glossaryVersions],
    ] as const) {
      const ada = await createTestUser(service, `first-${path}`);
      const answers = await sendAtOnce(
        ada,
        path,
        method,
        [0, 1, 2, 3].map((i) => bodyOf(i)),
        { 'if-none-match': '*' },
      );
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses, path).toEqual([201, 412, 412, 412]);
      const refused = answers.find((answer) => answer.status === 412)!;
      expect(JSON.parse(refused.body).detail, path).toMatch(/saves only the first one/);
      expect(await versions(ada), path).toHaveLength(1);
    }
  });

  it('a tag saves only when it is no longer current, and over MCP as if_none_match', async () => {
    const ada = await createTestUser(service, 'none-match-tag');
    const account = { account: ada.handle };
    const first = await sdk.saveVoice({ client: ada.client, path: account, body: { tone: 'one' } });
    await sdk.saveVoice({ client: ada.client, path: account, body: { tone: 'two' } });
    const past = await sdk.saveVoice({
      client: ada.client,
      path: account,
      headers: { 'If-None-Match': first.data!.etag },
      body: { tone: 'three' },
    });
    expect(past.response.status).toBe(201);
    const current = await sdk.saveVoice({
      client: ada.client,
      path: account,
      headers: { 'If-None-Match': `"x", W/${past.data!.etag}` },
      body: { tone: 'four' },
    });
    expect(current.response.status).toBe(412);

    const agent = await modernClient(service, ada.token);
    try {
      const refused = await agent.callTool({
        name: 'save_voice',
        arguments: { ...account, tone: 'from an agent', if_none_match: '*' },
      });
      expect(toolProblemOf(refused).status).toBe(412);
    } finally {
      await agent.close();
    }
    const read = await sdk.getVoice({ client: ada.client, path: account });
    expect(read.data).toMatchObject({ version: 3, tone: 'three' });
  });

  it('tells an If-Match of no shape it writes from one that is stale', async () => {
    const ada = await createTestUser(service, 'if-match-shapes');
    const account = { account: ada.handle };
    const first = await sdk.saveVoice({ client: ada.client, path: account, body: { tone: 'one' } });
    const current = first.data!.etag;
    // Weak, quoted twice, mangled: none can ever match, and "it changed since you read it" sent an agent
    // reloading the same etag and repeating the mistake.
    for (const tag of [`W/${current}`, `"${current}"`, 'garbage']) {
      const refused = await sdk.saveVoice({
        client: ada.client,
        path: account,
        headers: { 'If-Match': tag },
        body: { tone: 'lost' },
      });
      expect(refused.response.status, tag).toBe(412);
      expect((refused.error as { detail: string }).detail, tag).toContain('is no etag this service writes');
    }
    await sdk.saveVoice({ client: ada.client, path: account, body: { tone: 'two' } });
    const stale = await sdk.saveVoice({
      client: ada.client,
      path: account,
      headers: { 'If-Match': current },
      body: { tone: 'lost' },
    });
    expect((stale.error as { detail: string }).detail).toContain('changed since you read it');
  });

  it('holds for edits by term and the settings too, and a tool says it in its own words', async () => {
    const ada = await createTestUser(service, 'none-match-edits');
    const account = { account: ada.handle };
    const agent = await modernClient(service, ada.token);
    try {
      const { tools } = await agent.listTools();
      for (const name of [
        'save_voice',
        'save_glossary',
        'upsert_glossary_entries',
        'remove_glossary_entries',
      ]) {
        const tool = tools.find((t) => t.name === name)!;
        expect(Object.keys(tool.inputSchema.properties ?? {}), name).toContain('if_none_match');
        expect(JSON.stringify(tool), name).not.toContain('If-None-Match');
      }
      const add = (term: string) =>
        agent.callTool({
          name: 'upsert_glossary_entries',
          arguments: { ...account, entries: [{ term }], if_none_match: '*' },
        });
      expect((await add('first')).isError ?? false).toBe(false);
      const refused = toolProblemOf(await add('second'));
      expect(refused.status).toBe(412);
      expect(refused.detail).toContain('if_none_match');
      expect(refused.detail).not.toContain('If-None-Match');
    } finally {
      await agent.close();
    }
    const glossary = await sdk.getGlossary({ client: ada.client, path: account });
    expect(glossary.data!.entries.map((entry) => entry.term)).toEqual(['first']);

    // The settings always have a version (the defaults before the first update): `*` never saves.
    const settings = await sdk.updateGlossarySettings({
      client: ada.client,
      path: account,
      headers: { 'If-None-Match': '*' },
      body: { enforcementMode: 'strict' },
    });
    expect(settings.response.status).toBe(412);
    const read = await sdk.getGlossarySettings({ client: ada.client, path: account });
    expect(read.data).toMatchObject({ enforcementMode: 'warn', revision: 0 });
  });
});
