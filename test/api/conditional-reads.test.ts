// If-None-Match on everything that sends an ETag (voice, glossary, glossary settings): a client that holds
// the current version gets 304 with the ETag and no body; any other tag, or a request for a named version,
// gets the document.
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { mcpClient, modernClient } from '../mcp/helpers.ts';
import { tagPattern } from '../support/etag.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada, bob, cy } = useUsers(service, 'ada', 'bob', 'cy');

const get = (path: string, ifNoneMatch?: string) =>
  fetch(`${service.url}/api/v1/accounts/ada/${path}`, {
    headers: {
      authorization: `Bearer ${ada.token}`,
      ...(ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch }),
    },
  });

describe('conditional reads', () => {
  it('answer 304 for the current voice, glossary and settings, and the document otherwise', async () => {
    expect(
      (await sdk.saveVoice({ client: ada.client, path: { account: 'ada' }, body: { tone: 'warm' } })).response
        .status,
    ).toBe(201);
    const glossary = { entries: [{ term: 'workspace' }] };
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: glossary });
    await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body: glossary });

    const tags: Record<string, string> = {};
    for (const [path, shape] of [
      ['voice', tagPattern('v', 1)],
      ['glossary', tagPattern('v', 2)],
      ['glossary/settings', tagPattern('r', 0)],
    ] as const) {
      const first = await get(path);
      expect(first.status, path).toBe(200);
      const current = first.headers.get('etag')!;
      expect(current, path).toMatch(shape);
      tags[path] = current;

      for (const tag of [current, `W/${current}`, `"x", ${current}`, '*']) {
        const again = await get(path, tag);
        expect(again.status, `${path} ${tag}`).toBe(304);
        expect(again.headers.get('etag'), `${path} ${tag}`).toBe(current);
        expect(await again.text(), `${path} ${tag}`).toBe('');
      }
      // Another version, or this one of another account.
      const stale = await get(path, `"v0", "r9", ${current.replace(/\.[0-9a-f]{8}"$/, '.00000000"')}`);
      expect(stale.status, path).toBe(200);
      expect(await stale.json(), path).toMatchObject({ etag: current });
    }
    // A named version is the document, whatever the tag says: its own tag too, as over MCP. (fetch adds
    // `Cache-Control: no-cache` to a conditional request unless told otherwise, which would hide an HTTP
    // layer's own freshness check; curl and most SDKs send none.)
    for (const tag of [tags.glossary!, tags.glossary!.replace('"v2', '"v1')]) {
      const named = await fetch(`${service.url}/api/v1/accounts/ada/glossary?version=1`, {
        headers: { authorization: `Bearer ${ada.token}`, 'if-none-match': tag, 'cache-control': 'max-age=0' },
      });
      expect(named.status, tag).toBe(200);
      expect(await named.json(), tag).toMatchObject({ version: 1 });
    }
  });

  it('come back through the generated SDK as the README says: status 304, no data, an empty error', async () => {
    await sdk.saveVoice({ client: cy.client, path: { account: 'cy' }, body: { tone: 'plain' } });
    const read = await sdk.getVoice({ client: cy.client, path: { account: 'cy' } });
    const etag = read.data!.etag;
    const again = await sdk.getVoice({
      client: cy.client,
      path: { account: 'cy' },
      headers: { 'If-None-Match': etag },
    });
    // fetch does not count a 304 as ok, nor does the client: the status is what tells it apart.
    expect(again.response.status).toBe(304);
    expect(again.response.headers.get('etag')).toBe(etag);
    expect(again.data).toBeUndefined();
    expect(again.error).toEqual({});
    await expect(
      sdk.getVoice({
        client: cy.client,
        path: { account: 'cy' },
        headers: { 'If-None-Match': etag },
        throwOnError: true,
      }),
    ).rejects.toEqual({});
  });

  it("never answer 304 with another account's tag, even for the same version and handle", async () => {
    // Version numbers start at 1 in every account: an organization deleted (or renamed) and its handle
    // taken again starts over, and a client holding the old tag must get the new document, not a 304.
    const org = async (handle: string) => {
      const created = await sdk.createOrganization({
        client: bob.client,
        body: { handle, displayName: 'Tags' },
      });
      expect(created.response.status).toBe(201);
      for (const tone of ['first', 'second']) {
        await sdk.saveVoice({ client: bob.client, path: { account: handle }, body: { tone } });
      }
      await sdk.updateGlossarySettings({
        client: bob.client,
        path: { account: handle },
        body: { enforcementMode: 'strict' },
      });
      const voice = await sdk.getVoice({ client: bob.client, path: { account: handle } });
      const settings = await sdk.getGlossarySettings({ client: bob.client, path: { account: handle } });
      return { voice: voice.data!.etag, settings: settings.data!.etag };
    };
    const before = await org('tags-org');
    expect(before.voice).toMatch(tagPattern('v', 2));
    const deleted = await sdk.deleteOrganization({ client: bob.client, path: { org: 'tags-org' } });
    expect(deleted.response.status).toBe(204);
    const after = await org('tags-org');
    expect(after.voice).toMatch(tagPattern('v', 2));
    expect(after.voice).not.toBe(before.voice);
    expect(after.settings).not.toBe(before.settings);
    for (const [path, stale] of [
      ['voice', before.voice],
      ['glossary/settings', before.settings],
    ] as const) {
      const read = await fetch(`${service.url}/api/v1/accounts/tags-org/${path}`, {
        headers: { authorization: `Bearer ${bob.token}`, 'if-none-match': stale },
      });
      expect(read.status, path).toBe(200);
      // Nor does an old tag pass as If-Match: the save is refused, nothing is written.
      const save =
        path === 'voice'
          ? await sdk.saveVoice({
              client: bob.client,
              path: { account: 'tags-org' },
              body: { tone: 'third' },
              headers: { 'If-Match': stale },
            })
          : await sdk.updateGlossarySettings({
              client: bob.client,
              path: { account: 'tags-org' },
              body: { enforcementMode: 'off' },
              headers: { 'If-Match': stale },
            });
      expect(save.response.status, path).toBe(412);
    }
    const voice = await sdk.getVoice({ client: bob.client, path: { account: 'tags-org' } });
    expect(voice.data).toMatchObject({ version: 2, tone: 'second', etag: after.voice });
  });

  it('take a tag of the earlier form, the number alone, as a write precondition, and answer a read with the document', async () => {
    // Instances not yet upgraded hand out "v3" during a rolling upgrade, and clients hold such tags. A read
    // is sent whole: a 304 could keep a cache on another account's document, the hole the mark closes.
    await sdk.saveVoice({ client: cy.client, path: { account: 'cy' }, body: { tone: 'before' } });
    const { version } = (await sdk.getVoice({ client: cy.client, path: { account: 'cy' } })).data!;
    const earlier = `"v${version}"`;
    const read = await fetch(`${service.url}/api/v1/accounts/cy/voice`, {
      headers: { authorization: `Bearer ${cy.token}`, 'if-none-match': earlier },
    });
    expect(read.status).toBe(200);
    const saved = await sdk.saveVoice({
      client: cy.client,
      path: { account: 'cy' },
      headers: { 'If-Match': earlier },
      body: { tone: 'after' },
    });
    expect(saved.response.status).toBe(201);
    const stale = await sdk.saveVoice({
      client: cy.client,
      path: { account: 'cy' },
      headers: { 'If-Match': earlier },
      body: { tone: 'lost' },
    });
    expect(stale.response.status).toBe(412);
  });

  it('answer 404 when nothing is stored, whatever If-None-Match says', async () => {
    for (const path of ['voice', 'glossary']) {
      const none = await fetch(`${service.url}/api/v1/accounts/bob/${path}`, {
        headers: { authorization: `Bearer ${bob.token}`, 'if-none-match': '*' },
      });
      expect(none.status, path).toBe(404);
    }
  });

  it('over MCP, if_none_match answers "not modified" without the document', async () => {
    // An agent lists the tools first, and both SDK clients then check every result of a tool with an
    // outputSchema against it: a "not modified" without structuredContent was refused by the client.
    const modern = await modernClient(service, ada.token);
    const legacy = await mcpClient(service, ada.token);
    try {
      for (const client of [modern, legacy]) {
        await client.listTools();
        for (const [name, shape] of [
          ['get_voice', tagPattern('v', 1)],
          ['get_glossary', tagPattern('v', 2)],
          ['get_glossary_settings', tagPattern('r', 0)],
        ] as const) {
          const fresh = await client.callTool({ name, arguments: { account: 'ada' } });
          const etag = (fresh.structuredContent as { etag: string }).etag;
          expect(etag, name).toMatch(shape);
          const same = await client.callTool({ name, arguments: { account: 'ada', if_none_match: etag } });
          expect(same.isError ?? false, name).toBe(false);
          expect(same.structuredContent, name).toEqual({ notModified: true, etag });
          expect((same.content as { text: string }[])[0]!.text, name).toBe(
            `Not modified: ${etag} is still the current version; the copy you hold is up to date.`,
          );
        }
      }
    } finally {
      await modern.close();
      await legacy.close();
    }
  });

  it('over MCP at 2025-03-26 (no structuredContent), "not modified" is the JSON as text, as any result', async () => {
    const old = await mcpClient(service, ada.token, '2025-03-26');
    try {
      const fresh = await old.callTool({ name: 'get_voice', arguments: { account: 'ada' } });
      const etag = (JSON.parse((fresh.content as { text: string }[])[0]!.text) as { etag: string }).etag;
      const same = await old.callTool({
        name: 'get_voice',
        arguments: { account: 'ada', if_none_match: etag },
      });
      expect(same.structuredContent).toBeUndefined();
      expect(JSON.parse((same.content as { text: string }[])[0]!.text)).toEqual({ notModified: true, etag });
    } finally {
      await old.close();
    }
  });
});
