import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { createTestUser, sdkClient } from '../support/fixtures.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada, bob } = useUsers(service, 'ada', 'bob');

describe('projects through the generated SDK', () => {
  it('creates, reads, lists, updates and deletes a project in the personal account', async () => {
    const created = await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'website', name: 'Website', sourceLocale: 'en-us', targetLocales: ['de', 'fr-ca'] },
    });
    expect(created.response.status).toBe(201);
    // Location names where the new project is read.
    const location = created.response.headers.get('location');
    expect(location).toBe('/api/v1/accounts/ada/projects/website');
    const atLocation = await fetch(new URL(location!, service.url), {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(await atLocation.json()).toEqual(created.data);
    expect(created.data).toMatchObject({
      account: 'ada',
      handle: 'website',
      sourceLocale: 'en-US',
      targetLocales: ['de', 'fr-CA'],
    });

    // A read answers from a plain row, the create from the entity: the same representation.
    const got = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'website' } });
    expect(got.data).toEqual(created.data);

    const updated = await sdk.updateProject({
      client: ada.client,
      path: { account: 'ada', project: 'website' },
      body: { targetLocales: ['de', 'ja'] },
    });
    expect(updated.data?.targetLocales).toEqual(['de', 'ja']);

    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data?.items.map((p) => p.handle)).toEqual(['website']);
    // The list reads plain rows (timestamps formatted by PostgreSQL), a project alone its entity: the same
    // representation, to the millisecond.
    const alone = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'website' } });
    expect(list.data?.items[0]).toEqual(alone.data);
    expect(alone.data?.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const deleted = await sdk.deleteProject({
      client: ada.client,
      path: { account: 'ada', project: 'website' },
    });
    expect(deleted.response.status).toBe(204);
    const gone = await sdk.getProject({ client: ada.client, path: { account: 'ada', project: 'website' } });
    expect(gone.response.status).toBe(404);
  });

  it('paginates with a stable cursor', async () => {
    for (const handle of ['p1', 'p2', 'p3', 'p4', 'p5']) {
      const r = await sdk.createProject({
        client: bob.client,
        path: { account: 'bob' },
        body: { handle, name: handle, sourceLocale: 'en' },
      });
      expect(r.response.status).toBe(201);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const pageResult = await sdk.listProjects({
        client: bob.client,
        path: { account: 'bob' },
        query: { limit: 2, cursor },
      });
      expect(pageResult.data!.items.length).toBeLessThanOrEqual(2);
      seen.push(...pageResult.data!.items.map((p) => p.handle));
      cursor = pageResult.data!.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
  });

  it("hides another user's private account behind 404, for reads and writes", async () => {
    const read = await sdk.listProjects({ client: bob.client, path: { account: 'ada' } });
    expect(read.response.status).toBe(404);
    expect(read.response.headers.get('content-type')).toContain('application/problem+json');
    const write = await sdk.createProject({
      client: bob.client,
      path: { account: 'ada' },
      body: { handle: 'x1', name: 'x', sourceLocale: 'en' },
    });
    expect(write.response.status).toBe(404);
  });

  it('answers 401 with a Bearer challenge without a token, and 403 insufficient_scope without the scope', async () => {
    const anonymous = await sdk.listProjects({ client: sdkClient(service), path: { account: 'ada' } });
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.response.headers.get('www-authenticate')).toMatch(/^Bearer .*resource_metadata="/);

    const reader = await createTestUser(service, 'reader', ['project:read']);
    const denied = await sdk.createProject({
      client: reader.client,
      path: { account: 'reader' },
      body: { handle: 'x1', name: 'x', sourceLocale: 'en' },
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain(
      'error="insufficient_scope", scope="project:write"',
    );
  });

  it('rejects invalid input with 400 problem+json and pointers, and stores nothing', async () => {
    const bad = await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'Bad Handle', name: '', sourceLocale: 'en' } as never,
    });
    expect(bad.response.status).toBe(400);
    const pointers = (bad.error as { errors: { pointer: string }[] }).errors.map((e) => e.pointer);
    expect(pointers).toEqual(expect.arrayContaining(['/body/handle', '/body/name']));

    const badLocale = await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'loc', name: 'L', sourceLocale: 'en-x-' },
    });
    expect(badLocale.response.status).toBe(400);
    const sameAsSource = await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'loc', name: 'L', sourceLocale: 'en', targetLocales: ['en'] },
    });
    expect(sameAsSource.response.status).toBe(400);
    // 34 characters as sent, 39 in canonical form (sh is sr-Latn): more than a locale may have.
    const grown = await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: {
        handle: 'loc',
        name: 'L',
        sourceLocale: 'en',
        targetLocales: ['sh-RS-u-ca-buddhist-nu-latn-x-abcd'],
      },
    });
    expect(grown.response.status).toBe(400);
    expect(grown.error).toMatchObject({
      errors: [
        { pointer: '/body/targetLocales/0', message: expect.stringMatching(/sr-Latn-RS.*at most 35/) },
      ],
    });

    const list = await sdk.listProjects({ client: ada.client, path: { account: 'ada' } });
    expect(list.data?.items).toEqual([]);
  });

  it('points a source locale that is also a target at the field the request sent', async () => {
    const path = { account: 'ada', project: 'clash' };
    await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'clash', name: 'Clash', sourceLocale: 'en', targetLocales: ['de'] },
    });
    for (const [body, pointer] of [
      [{ sourceLocale: 'de' }, '/body/sourceLocale'],
      [{ targetLocales: ['de', 'en'] }, '/body/targetLocales'],
      [{ sourceLocale: 'fr', targetLocales: ['FR'] }, '/body/targetLocales'],
    ] as const) {
      const refused = await sdk.updateProject({ client: ada.client, path, body: body as never });
      expect(refused.response.status, JSON.stringify(body)).toBe(400);
      expect(refused.error).toMatchObject({
        errors: [
          { pointer, message: expect.stringMatching(/cannot be both the source locale and a target/) },
        ],
      });
    }
    expect((await sdk.getProject({ client: ada.client, path })).data).toMatchObject({
      sourceLocale: 'en',
      targetLocales: ['de'],
    });
    await sdk.deleteProject({ client: ada.client, path });
  });

  it('answers a duplicate handle with 409', async () => {
    const body = { handle: 'dup', name: 'Dup', sourceLocale: 'en' };
    expect(
      (await sdk.createProject({ client: ada.client, path: { account: 'ada' }, body })).response.status,
    ).toBe(201);
    const again = await sdk.createProject({ client: ada.client, path: { account: 'ada' }, body });
    expect(again.response.status).toBe(409);
  });

  it('routes unknown paths to 404 and wrong methods to 405 with Allow', async () => {
    const unknown = await fetch(`${service.url}/api/v1/nope`, {
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(unknown.status).toBe(404);
    const wrong = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ada.token}` },
    });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, POST');
  });

  it('answers HEAD as the GET of the same path, without the body', async () => {
    await sdk.createProject({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'headed', name: 'Headed', sourceLocale: 'en' },
    });
    await sdk.saveVoice({ client: ada.client, path: { account: 'ada' }, body: { tone: 'warm' } });
    for (const [path, token] of [
      ['/api/v1/accounts/ada/projects', ada.token],
      ['/api/v1/accounts/ada/projects/headed', ada.token],
      ['/api/v1/accounts/ada/voice', ada.token],
      ['/api/v1/user', ada.token],
      ['/api/v1/accounts/ada/projects/nope', ada.token],
      ['/api/v1/accounts/ada/projects', undefined],
    ] as const) {
      const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      const get = await fetch(`${service.url}${path}`, { headers });
      const head = await fetch(`${service.url}${path}`, { method: 'HEAD', headers });
      expect(head.status, path).toBe(get.status);
      for (const name of ['content-type', 'content-length', 'etag', 'www-authenticate']) {
        expect(head.headers.get(name), `${path} ${name}`).toBe(get.headers.get(name));
      }
      expect(await head.text(), path).toBe('');
    }
  });
});
