// Projects and organizations are edited in place by several people and agents. Each carries an ETag of its
// revision: an update sent with If-Match is refused (412, nothing changed) when anyone changed the resource
// since it was read, so adding a locale to the list one read cannot undo a locale someone added meanwhile.
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { modernClient, toolProblemOf } from '../mcp/helpers.ts';
import { tagPattern } from '../support/etag.ts';
import { createTestOrganization } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService();
const db = useDatabaseClient(service);
const { ada } = useUsers(service, 'ada');

const api = (
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
) =>
  fetch(`${service.url}/api/v1/${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${ada.token}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

async function createProject(handle: string, targetLocales = ['de']) {
  const created = await sdk.createProject({
    client: ada.client,
    path: { account: 'ada' },
    body: { handle, name: handle, sourceLocale: 'en', targetLocales },
  });
  expect(created.response.status).toBe(201);
  return created;
}

describe('project revisions', () => {
  it('tag every representation of a project the same way, and move only when the project changes', async () => {
    const created = await createProject('site');
    const tag = created.data!.etag;
    expect(tag).toMatch(tagPattern('p', 1));
    expect(created.response.headers.get('etag')).toBe(tag);

    const read = await api('accounts/ada/projects/site');
    expect(read.headers.get('etag')).toBe(tag);
    expect((await read.json()).etag).toBe(tag);
    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data!.items.find((p) => p.handle === 'site')!.etag).toBe(tag);

    // The same PATCH twice: the first moves the revision, the second changes nothing and keeps it.
    const changed = await api('accounts/ada/projects/site', {
      method: 'PATCH',
      headers: { 'if-match': tag },
      body: { targetLocales: ['de', 'fr'] },
    });
    expect(changed.status).toBe(200);
    const next = changed.headers.get('etag')!;
    expect(next).toMatch(tagPattern('p', 2));
    expect((await changed.json()).etag).toBe(next);
    const same = await api('accounts/ada/projects/site', {
      method: 'PATCH',
      headers: { 'if-match': next },
      body: { targetLocales: ['de', 'fr'] },
    });
    expect(same.status).toBe(200);
    expect(same.headers.get('etag')).toBe(next);

    // A conditional read of the current revision is 304; of the earlier one, the project.
    const unchanged = await api('accounts/ada/projects/site', { headers: { 'if-none-match': next } });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('etag')).toBe(next);
    const older = await api('accounts/ada/projects/site', { headers: { 'if-none-match': tag } });
    expect(older.status).toBe(200);
  });

  it('refuse an update based on an earlier read with 412, and change nothing', async () => {
    const tag = (await createProject('docs', ['de'])).data!.etag;
    // Someone adds French first.
    await sdk.updateProject({
      client: ada.client,
      path: { account: 'ada', project: 'docs' },
      body: { targetLocales: ['de', 'fr'] },
    });
    // An agent that read ['de'] adds Japanese to what it read.
    const stale = await api('accounts/ada/projects/docs', {
      method: 'PATCH',
      headers: { 'if-match': tag },
      body: { targetLocales: ['de', 'ja'], name: 'Docs' },
    });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = await stale.json();
    expect(problem).toMatchObject({ status: 412 });
    expect(problem.detail).toContain('project "docs" changed since you read it');
    const now = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'docs' } });
    expect(now.data).toMatchObject({ name: 'docs', targetLocales: ['de', 'fr'] });
    expect(now.data!.etag).toMatch(tagPattern('p', 2));
    expect(problem.detail).toContain(now.data!.etag);

    // A tag of no shape this service writes, and another resource's tag, never match.
    for (const wrong of [`W/${now.data!.etag}`, '"v2.00000000"', now.data!.etag.replace('"p', '"o')]) {
      const refused = await api('accounts/ada/projects/docs', {
        method: 'PATCH',
        headers: { 'if-match': wrong },
        body: { name: 'Wrong' },
      });
      expect(refused.status, wrong).toBe(412);
    }
    expect(
      (await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'docs' } })).data!.name,
    ).toBe('docs');
  });

  it("answer a retry of an update already made with 200, and tell another resource's tag apart", async () => {
    const tag = (await createProject('retry', ['de'])).data!.etag;
    const send = (ifMatch: string, body: unknown) =>
      api('accounts/ada/projects/retry', { method: 'PATCH', headers: { 'if-match': ifMatch }, body });
    const first = await send(tag, { targetLocales: ['de', 'fr'] });
    expect(first.status).toBe(200);
    const next = first.headers.get('etag')!;
    // The answer was lost and the agent sends the same update with the same tag: it is done already.
    const again = await send(tag, { targetLocales: ['de', 'fr'] });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(next);
    // The same tag with another change is stale, and so is one whose values would be refused too: the
    // precondition is decided first.
    const other = await send(tag, { targetLocales: ['de', 'ja'] });
    expect(other.status).toBe(412);
    expect((await send(tag, { sourceLocale: 'de' })).status).toBe(412);
    expect((await send(next, { sourceLocale: 'de' })).status).toBe(400);
    expect((await other.json()).detail).toContain('changed since you read it');
    // An organization's tag, or another project's, is no tag of this project: said so.
    const foreign = (await createProject('other')).data!.etag;
    const wrong = await send(foreign, { name: 'x' });
    expect(wrong.status).toBe(412);
    expect((await wrong.json()).detail).toContain(
      'is the etag of another resource, not of the project "retry"',
    );
    expect(
      (await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'retry' } })).data,
    ).toMatchObject({ name: 'retry', targetLocales: ['de', 'fr'], etag: next });
  });

  it('delete a project or an organization sent with a stale If-Match not at all (412)', async () => {
    const tag = (await createProject('doomed')).data!.etag;
    await sdk.updateProject({
      client: ada.client,
      path: { account: 'ada', project: 'doomed' },
      body: { description: 'changed meanwhile' },
    });
    const stale = await api('accounts/ada/projects/doomed', {
      method: 'DELETE',
      headers: { 'if-match': tag },
    });
    expect(stale.status).toBe(412);
    const current = (
      await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'doomed' } })
    ).data!.etag;
    const deleted = await api('accounts/ada/projects/doomed', {
      method: 'DELETE',
      headers: { 'if-match': current },
    });
    expect(deleted.status).toBe(204);

    const org = await sdk.createOrganization({
      client: ada.client,
      body: { handle: 'doomed-org', displayName: 'D' },
    });
    await sdk.updateOrganization({
      client: ada.client,
      path: { org: 'doomed-org' },
      body: { displayName: 'E' },
    });
    const staleOrg = await api('organizations/doomed-org', {
      method: 'DELETE',
      headers: { 'if-match': org.data!.etag },
    });
    expect(staleOrg.status).toBe(412);
    expect(
      (await sdk.getOrganization({ client: ada.client, path: { org: 'doomed-org' } })).response.status,
    ).toBe(200);
  });

  it('let exactly one of two updates sent at once with the same If-Match through', async () => {
    const tag = (await createProject('race', ['de'])).data!.etag;
    const [a, b] = await Promise.all(
      ['fr', 'ja'].map((locale) =>
        api('accounts/ada/projects/race', {
          method: 'PATCH',
          headers: { 'if-match': tag },
          body: { targetLocales: ['de', locale] },
        }),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 412]);
    const winner = (await (a!.status === 200 ? a! : b!).json()) as { targetLocales: string[] };
    const stored = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'race' } });
    expect(stored.data!.targetLocales).toEqual(winner.targetLocales);
  });

  it('count a change written by anything else (an instance not yet upgraded, the admin CLI)', async () => {
    const tag = (await createProject('outside')).data!.etag;
    await db.query("update projects set description = 'written elsewhere' where handle = 'outside'");
    const refused = await api('accounts/ada/projects/outside', {
      method: 'PATCH',
      headers: { 'if-match': tag },
      body: { description: 'mine' },
    });
    expect(refused.status).toBe(412);
    // A write that leaves what the API shows as it is (a timestamp only) keeps the revision.
    const current = (
      await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'outside' } })
    ).data!.etag;
    await db.query("update projects set updated_at = now() where handle = 'outside'");
    const kept = await api('accounts/ada/projects/outside', {
      method: 'PATCH',
      headers: { 'if-match': current },
      body: { description: 'mine' },
    });
    expect(kept.status).toBe(200);
  });

  it('give a project made again under the same handle a tag the old one does not match', async () => {
    const old = (await createProject('again')).data!.etag;
    await sdk.deleteProject({ client: ada.client, path: { account: 'ada', project: 'again' } });
    const fresh = (await createProject('again')).data!.etag;
    expect(fresh).toMatch(tagPattern('p', 1));
    expect(fresh).not.toBe(old);
    const refused = await api('accounts/ada/projects/again', {
      method: 'PATCH',
      headers: { 'if-match': old },
      body: { name: 'Stale' },
    });
    expect(refused.status).toBe(412);
    const cached = await api('accounts/ada/projects/again', { headers: { 'if-none-match': old } });
    expect(cached.status).toBe(200);
  });

  it('take if_match over MCP: a stale one is a tool error with status 412, and nothing changes', async () => {
    const tag = (await createProject('agent', ['de'])).data!.etag;
    await sdk.updateProject({
      client: ada.client,
      path: { account: 'ada', project: 'agent' },
      body: { targetLocales: ['de', 'fr'] },
    });
    const mcp = await modernClient(service, ada.token);
    try {
      const read = await mcp.callTool({
        name: 'get_project',
        arguments: { account: 'ada', project: 'agent' },
      });
      const current = (read.structuredContent as { etag: string }).etag;
      expect(current).toMatch(tagPattern('p', 2));
      const stale = await mcp.callTool({
        name: 'update_project',
        arguments: { account: 'ada', project: 'agent', if_match: tag, targetLocales: ['de', 'ja'] },
      });
      expect(toolProblemOf(stale)).toMatchObject({ status: 412 });
      const fresh = await mcp.callTool({
        name: 'update_project',
        arguments: { account: 'ada', project: 'agent', if_match: current, targetLocales: ['de', 'fr', 'ja'] },
      });
      expect(fresh.isError).toBeFalsy();
      expect(fresh.structuredContent).toMatchObject({ targetLocales: ['de', 'fr', 'ja'] });
    } finally {
      await mcp.close();
    }
  });
});

describe('organization revisions', () => {
  it('tag an organization, refuse a stale update with 412 and change nothing', async () => {
    const created = await sdk.createOrganization({
      client: ada.client,
      body: { handle: 'acme-rev', displayName: 'Acme' },
    });
    const tag = created.data!.etag;
    expect(tag).toMatch(tagPattern('o', 1));
    expect(created.response.headers.get('etag')).toBe(tag);
    const read = await api('organizations/acme-rev');
    expect(read.headers.get('etag')).toBe(tag);
    const mine = await sdk.listOrganizations({ client: ada.client });
    expect(mine.data!.items.find((o) => o.handle === 'acme-rev')!.etag).toBe(tag);
    // Not a conditional read: the body holds the caller's role, which changes without the organization.
    expect((await api('organizations/acme-rev', { headers: { 'if-none-match': tag } })).status).toBe(200);

    const renamed = await api('organizations/acme-rev', {
      method: 'PATCH',
      headers: { 'if-match': tag },
      body: { displayName: 'Acme Inc.' },
    });
    expect(renamed.status).toBe(200);
    const next = renamed.headers.get('etag')!;
    expect(next).toMatch(tagPattern('o', 2));

    const stale = await api('organizations/acme-rev', {
      method: 'PATCH',
      headers: { 'if-match': tag },
      body: { visibility: 'public' },
    });
    expect(stale.status).toBe(412);
    // The account's glossary settings are at their own revision: their tag is not the organization's.
    const settings = await api('accounts/acme-rev/glossary/settings');
    const settingsTag = settings.headers.get('etag')!;
    const other = await api('organizations/acme-rev', {
      method: 'PATCH',
      headers: { 'if-match': settingsTag.replace(/^"r\d+/, '"r2') },
      body: { visibility: 'public' },
    });
    expect(other.status).toBe(412);
    const now = await sdk.getOrganization({ client: ada.client, path: { org: 'acme-rev' } });
    expect(now.data).toMatchObject({ displayName: 'Acme Inc.', visibility: 'private', etag: next });
  });

  it('let exactly one of two admins updating at once with the same If-Match through', async () => {
    await createTestOrganization(service, 'twins', ada);
    const tag = (await sdk.getOrganization({ client: ada.client, path: { org: 'twins' } })).data!.etag;
    const [a, b] = await Promise.all(
      ['Twins One', 'Twins Two'].map((displayName) =>
        api('organizations/twins', { method: 'PATCH', headers: { 'if-match': tag }, body: { displayName } }),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 412]);
    const winner = (await (a!.status === 200 ? a! : b!).json()) as { displayName: string; etag: string };
    const stored = await sdk.getOrganization({ client: ada.client, path: { org: 'twins' } });
    expect(stored.data).toMatchObject({ displayName: winner.displayName, etag: winner.etag });
  });
});
