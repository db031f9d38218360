// The documented maximum fits the body limit: a real glossary of 5,000 entries (a term, a definition of a
// line or two, translations into ten locales) saves whole, over REST and over MCP, and reads back the same.
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { MAX_REQUEST_BODY_BYTES } from '../../src/api/limits.ts';
import { FULL_TEXT_MAX_BYTES } from '../../src/mcp/call.ts';
import { jsonRpcOf, modernClient } from '../mcp/helpers.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada } = useUsers(service, 'ada');

const LOCALES = ['de', 'fr', 'es', 'it', 'pt', 'nl', 'pl', 'sv', 'ja', 'ko'];
const bigGlossary = (note: string) => ({
  changeNote: note,
  entries: Array.from({ length: 5000 }, (_, i) => ({
    term: `Workspace feature ${String(i).padStart(4, '0')}`,
    definition:
      `The part of a workspace that people use to share documents, plan releases and review the work of ` +
      `others before it ships; entry ${i} of the product glossary, kept in step with the user interface.`,
    translations: Object.fromEntries(
      LOCALES.map((locale) => [locale, `Arbeitsbereich-Funktion ${locale} ${i}`]),
    ),
  })),
});

describe('a 5,000-entry glossary', () => {
  it('is larger than the old 1 MB limit and within the body limit', () => {
    const size = Buffer.byteLength(JSON.stringify(bigGlossary('size')));
    expect(size).toBeGreaterThan(2 * 1024 * 1024);
    expect(size).toBeLessThan(MAX_REQUEST_BODY_BYTES);
  });

  it('saves whole over REST and reads back entry for entry', async () => {
    const body = bigGlossary('whole, over REST');
    const saved = await sdk.saveGlossary({ client: ada.client, path: { account: 'ada' }, body });
    expect(saved.response.status).toBe(201);
    const read = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
    expect(read.data!.entries).toHaveLength(5000);
    expect(read.data!.entries[4321]).toMatchObject(body.entries[4321]!);
  });

  it('saves whole over MCP', async () => {
    const client = await modernClient(service, ada.token);
    try {
      const result = await client.callTool({
        name: 'save_glossary',
        arguments: { account: 'ada', ...bigGlossary('whole, over MCP') },
      });
      expect(result.isError ?? false).toBe(false);
      const read = await sdk.getGlossary({ client: ada.client, path: { account: 'ada' } });
      expect(read.data!.changeNote).toBe('whole, over MCP');
      expect(read.data!.entries).toHaveLength(5000);

      // Read back over MCP: the structured result is whole, and its text is a summary, not a second copy.
      const got = await client.callTool({ name: 'get_glossary', arguments: { account: 'ada' } });
      expect((got.structuredContent as { entries: unknown[] }).entries).toHaveLength(5000);
      const [text] = got.content as { type: string; text: string }[];
      expect(Buffer.byteLength(text!.text)).toBeLessThan(FULL_TEXT_MAX_BYTES);
      // With the version and its etag, which a later edit names in if_match.
      const { version, etag } = got.structuredContent as { version: number; etag: string };
      expect(text!.text).toBe(
        `get_glossary: 5000 entries (${Math.ceil(Buffer.byteLength(JSON.stringify(got.structuredContent)) / 1024)} kB as JSON). Version ${version}, etag ${etag}. The full result is in structuredContent.`,
      );
    } finally {
      await client.close();
    }
  });

  it('reads whole as text over MCP for a client whose revision has no structuredContent', async () => {
    const saved = await sdk.saveGlossary({
      client: ada.client,
      path: { account: 'ada' },
      body: bigGlossary('read as text'),
    });
    expect(saved.response.status).toBe(201);
    const call = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'get_glossary', arguments: { account: 'ada' } },
    };
    // 2025-03-26, and a request without the revision header, which MCP reads as 2025-03-26.
    for (const revision of ['2025-03-26', undefined]) {
      const response = await fetch(`${service.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ada.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(revision ? { 'mcp-protocol-version': revision } : {}),
        },
        body: JSON.stringify(call),
      });
      const message = await jsonRpcOf(response);
      const [text] = message.result.content as { type: string; text: string }[];
      const entries = (JSON.parse(text!.text) as { entries: { term: string }[] }).entries;
      expect(entries, String(revision)).toHaveLength(5000);
      expect(entries[4321]!.term).toBe('Workspace feature 4321');
    }
  });
});
