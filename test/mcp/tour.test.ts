import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { useService, useUsers } from '../support/suite.ts';
import { modernClient } from './helpers.ts';

// Every tool of tools/list is called with valid arguments and must succeed, by the v2 SDK client at the
// 2026-07-28 revision (server.test.ts and modern.test.ts cover the 2025-era clients); the client validates
// each structuredContent against the tool's outputSchema, so a response that drifts from openapi.yaml's
// success schema fails here. A new x-mcp operation fails the last test until the tour calls it.

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');
let mcp: Client;
const called = new Set<string>();

beforeAll(async () => {
  mcp = await modernClient(service, ada.token);
  await mcp.listTools(); // the client validates outputs of the tools it has listed
});
afterAll(async () => {
  await mcp?.close();
});

async function call(name: string, args: Record<string, unknown> = {}, as: Client = mcp) {
  const result = await as.callTool({ name, arguments: args });
  expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
  called.add(name);
  // biome-ignore lint/suspicious/noExplicitAny: the shape was just validated against the tool's outputSchema
  return result.structuredContent as Record<string, any> | undefined;
}

describe('a tour of every MCP tool', () => {
  it('accounts and projects', async () => {
    const accounts = await call('list_accounts');
    expect(accounts!.items.map((a: { handle: string }) => a.handle)).toEqual(['ada']);
    expect((await call('get_account', { account: 'ada' }))!.kind).toBe('user');
    await call('create_project', { account: 'ada', handle: 'site', name: 'Site', sourceLocale: 'en' });
    await call('update_project', { account: 'ada', project: 'site', description: 'The website' });
    expect((await call('get_project', { account: 'ada', project: 'site' }))!.description).toBe('The website');
    expect((await call('list_projects', { account: 'ada', limit: 5 }))!.items).toHaveLength(1);

    const { tools } = await mcp.listTools();
    expect(tools.find((tool) => tool.name === 'delete_project')!.annotations).toMatchObject({
      destructiveHint: true,
      readOnlyHint: false,
    });
    await call('create_project', { account: 'ada', handle: 'scratch', name: 'Scratch', sourceLocale: 'en' });
    await call('delete_project', { account: 'ada', project: 'scratch' });
    const gone = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'scratch' } });
    expect(gone.response.status).toBe(404);
  });

  it('organizations, members and invitations', async () => {
    await call('create_organization', { handle: 'acme', displayName: 'Acme' });
    await call('update_organization', { org: 'acme', visibility: 'private', displayName: 'Acme Inc.' });
    expect((await call('get_organization', { org: 'acme' }))!.displayName).toBe('Acme Inc.');
    expect((await call('list_organizations'))!.items.map((o: { handle: string }) => o.handle)).toContain(
      'acme',
    );

    // Bob's own agent answers the invitations sent to him: one declined, the next accepted.
    const bobMcp = await modernClient(service, bob.token);
    try {
      const first = await call('create_invitation', {
        org: 'acme',
        email: 'bob@example.com',
        role: 'member',
      });
      await call('decline_invitation', { token: first!.acceptToken }, bobMcp);
      const declined = await sdk.listInvitations({
        client: ada.client,
        path: { org: 'acme' },
        query: { status: 'declined' },
      });
      expect(declined.data?.items.find((i) => i.id === first!.id)?.status).toBe('declined');

      const invited = await call('create_invitation', {
        org: 'acme',
        email: 'bob@example.com',
        role: 'member',
      });
      const joined = await call('accept_invitation', { token: invited!.acceptToken }, bobMcp);
      expect(joined).toMatchObject({ handle: 'acme' });
    } finally {
      await bobMcp.close();
    }
    const second = await call('create_invitation', { org: 'acme', email: 'carol@example.com' });
    const pending = await call('list_invitations', { org: 'acme', status: 'pending' });
    expect(pending!.items.map((i: { email: string }) => i.email)).toEqual(['carol@example.com']);
    await call('revoke_invitation', { org: 'acme', invitation: second!.id });

    expect((await call('update_member_role', { org: 'acme', user: 'bob', role: 'admin' }))!.role).toBe(
      'admin',
    );
    const members = await call('list_members', { org: 'acme' });
    expect(members!.items.map((m: { user: string }) => m.user).sort()).toEqual(['ada', 'bob']);
    await call('remove_member', { org: 'acme', user: 'bob' });
    const after = await sdk.listMembers({ client: ada.client, path: { org: 'acme' } });
    expect(after.data?.items.map((m) => m.user)).toEqual(['ada']);
  });

  it('voice and glossary, with If-Match from the etag', async () => {
    const saved = await call('save_voice', { account: 'acme', tone: 'Friendly', formality: 'informal' });
    const voice = await call('get_voice', { account: 'acme' });
    expect(voice!.tone).toBe('Friendly');
    await call('save_voice', { account: 'acme', if_match: voice!.etag, tone: 'Warm', changeNote: 'warmer' });
    const stale = await mcp.callTool({
      name: 'save_voice',
      arguments: { account: 'acme', if_match: saved!.etag, tone: 'Cold' },
    });
    expect(stale.isError).toBe(true);
    expect(JSON.parse((stale.content as { text: string }[])[0]!.text).status).toBe(412);
    expect((await call('list_voice_versions', { account: 'acme' }))!.items).toHaveLength(2);

    await call('save_glossary', {
      account: 'acme',
      entries: [
        { term: 'Acme Cloud', doNotTranslate: true },
        { term: 'workspace', translations: { de: 'Arbeitsbereich' } },
      ],
    });
    const glossary = await call('get_glossary', { account: 'acme' });
    expect(glossary!.entries[1].translations).toEqual({ de: 'Arbeitsbereich' });
    const upserted = await call('upsert_glossary_entries', {
      account: 'acme',
      if_match: glossary!.etag,
      entries: [{ term: 'workspace', translations: { de: 'Arbeitsbereich', fr: 'espace de travail' } }],
      changeNote: 'French for workspace',
    });
    expect(upserted).toMatchObject({ version: 2, updated: ['workspace'], entryCount: 2 });
    const found = await call('search_glossary_entries', { account: 'acme', locale: 'fr' });
    expect(found!.items.map((entry: { term: string }) => entry.term)).toEqual(['workspace']);
    const staleEdit = await mcp.callTool({
      name: 'remove_glossary_entries',
      arguments: { account: 'acme', if_match: glossary!.etag, terms: ['workspace'] },
    });
    expect(staleEdit.isError).toBe(true);
    expect(JSON.parse((staleEdit.content as { text: string }[])[0]!.text).status).toBe(412);
    const removed = await call('remove_glossary_entries', {
      account: 'acme',
      if_match: upserted!.etag,
      terms: ['workspace'],
    });
    expect(removed).toMatchObject({ version: 3, removed: ['workspace'], entryCount: 1 });
    expect((await call('list_glossary_versions', { account: 'acme' }))!.items).toHaveLength(3);
    const settings = await call('get_glossary_settings', { account: 'acme' });
    const updated = await call('update_glossary_settings', {
      account: 'acme',
      if_match: settings!.etag,
      enforcementMode: 'strict',
    });
    expect(updated!.enforcementMode).toBe('strict');
  });

  it('account models and account tokens', async () => {
    await call('create_model', {
      account: 'ada',
      handle: 'fast',
      model: 'openai:gpt-4o-mini',
      apiKey: 'sk-test-12345678',
    });
    const model = await call('update_model', { account: 'ada', modelHandle: 'fast', isDefault: true });
    expect(JSON.stringify(model)).not.toContain('sk-test-12345678');
    expect(await call('get_model', { account: 'ada', modelHandle: 'fast' })).toEqual(model);
    expect((await call('list_models', { account: 'ada' }))!.items).toHaveLength(1);
    await call('delete_model', { account: 'ada', modelHandle: 'fast' });

    const created = await call('create_token', {
      account: 'ada',
      name: 'ci',
      scopes: ['project:read'],
      expiresInDays: 7,
    });
    expect(created!.token).toMatch(/^l10n_/);
    const tokens = await call('list_tokens', { account: 'ada' });
    expect(JSON.stringify(tokens)).not.toContain(created!.token);
    await call('revoke_token', { account: 'ada', token: created!.id });
    const revoked = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      headers: { Authorization: `Bearer ${created!.token}` },
    });
    expect(revoked.status).toBe(401);
  });

  it('connected OAuth apps', async () => {
    expect((await call('list_connected_apps'))!.items).toEqual([]);
  });

  it('the audit log', async () => {
    // The tour so far, on the organization and on ada's own account: newest kinds of event included.
    const org = await call('list_audit_events', { account: 'acme', action: 'member.remove' });
    expect(org!.items.map((e: { details: { user: string } }) => e.details.user)).toEqual(['bob']);
    const own = await call('list_audit_events', { account: 'ada', limit: 100 });
    const actions = own!.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['project.create', 'token.create', 'token.revoke']));
    expect(own!.items.every((e: { door: string }) => e.door === 'mcp')).toBe(true);
  });

  it('has called every tool the server lists', async () => {
    const { tools } = await mcp.listTools();
    const missing = tools.map((tool) => tool.name).filter((name) => !called.has(name));
    expect(missing, 'add these tools to the tour in test/mcp/tour.test.ts').toEqual([]);
  });
});
