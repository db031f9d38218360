import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { createFieldCipher } from '../../src/lib/field-encryption.ts';
import { createTestUser } from '../support/fixtures.ts';
import { useDatabaseClient, useService, useUsers } from '../support/suite.ts';

const service = useService();
const db = useDatabaseClient(service);
const { ada, bob } = useUsers(service, 'ada', 'bob');

async function storedKey(
  id: string,
): Promise<{ api_key_encrypted: Buffer | null; api_key_last4: string | null }> {
  const { rows } = await db.query(
    'select api_key_encrypted, api_key_last4 from account_models where id = $1',
    [id],
  );
  return rows[0];
}

async function modelCount(handle: string): Promise<number> {
  const { rows } = await db.query(
    'select count(*)::int as n from account_models m join accounts a on a.id = m.account_id where a.handle = $1',
    [handle],
  );
  return rows[0].n;
}

describe('account models through the generated SDK', () => {
  it('encrypts the API key at rest, bound to the row, and decrypts it back', async () => {
    const apiKey = 'sk-test-0123456789-secret-wxyz';
    const created = await sdk.createModel({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'gpt', model: 'openai:gpt-4o', apiKey },
    });
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get('location')).toBe('/api/v1/accounts/ada/models/gpt');
    expect(created.data).toMatchObject({
      account: 'ada',
      handle: 'gpt',
      model: 'openai:gpt-4o',
      baseUrl: null,
      hasApiKey: true,
      apiKeyLast4: 'wxyz',
      isDefault: false,
    });

    const stored = await storedKey(created.data!.id);
    expect(stored.api_key_last4).toBe('wxyz');
    const ciphertext = stored.api_key_encrypted!;
    expect(ciphertext.includes(Buffer.from(apiKey))).toBe(false);
    expect(ciphertext.includes(Buffer.from('secret'))).toBe(false);
    const cipher = createFieldCipher(service.config.fieldEncryptionKey);
    expect(cipher.decrypt(ciphertext, created.data!.id)).toBe(apiKey);
    // The row id is the associated data: the same ciphertext does not open as another row's key.
    expect(() => cipher.decrypt(ciphertext, bob.userId)).toThrow();
  });

  it('never returns the API key in any response, and clears it on apiKey: null', async () => {
    const apiKey = 'sk-never-shown-ABCDEFGH-9876';
    const replacement = 'sk-replacement-key-IJKL-5432';
    const bodies: unknown[] = [];
    const created = await sdk.createModel({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'claude', model: 'anthropic:claude-sonnet-4', apiKey },
    });
    bodies.push(created.data);
    bodies.push((await sdk.listModels({ client: ada.client, path: { account: 'ada' } })).data);
    const rotated = await sdk.updateModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'claude' },
      body: { apiKey: replacement },
    });
    expect(rotated.data).toMatchObject({ hasApiKey: true, apiKeyLast4: '5432' });
    bodies.push(rotated.data);
    bodies.push((await sdk.listModels({ client: ada.client, path: { account: 'ada' } })).data);
    const one = await sdk.getModel({ client: ada.client, path: { account: 'ada', modelHandle: 'claude' } });
    expect(one.data).toEqual(rotated.data);
    // The list's plain row (timestamps formatted by PostgreSQL) reads as the entity does.
    const listed = (bodies.at(-1) as { items: { handle: string }[] }).items;
    expect(listed.find((model) => model.handle === 'claude')).toEqual(one.data);
    bodies.push(one.data);
    for (const body of bodies) {
      const text = JSON.stringify(body);
      expect(text).not.toContain(apiKey);
      expect(text).not.toContain(replacement);
      expect(text).not.toMatch(/apiKeyEncrypted|api_key_encrypted/);
    }
    const cipher = createFieldCipher(service.config.fieldEncryptionKey);
    expect(cipher.decrypt((await storedKey(created.data!.id)).api_key_encrypted!, created.data!.id)).toBe(
      replacement,
    );

    const cleared = await sdk.updateModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'claude' },
      body: { apiKey: null },
    });
    expect(cleared.data).toMatchObject({ hasApiKey: false, apiKeyLast4: null });
    expect(await storedKey(created.data!.id)).toEqual({ api_key_encrypted: null, api_key_last4: null });
  });

  it('shows the last four characters of a key, not half of a character beyond the BMP', async () => {
    // The key's last four UTF-16 code units were a lone surrogate and three letters: the answer held
    // invalid Unicode, and PostgreSQL stored U+FFFD in its place, so later reads showed something else.
    const created = await sdk.createModel({
      client: bob.client,
      path: { account: 'bob' },
      body: { handle: 'emoji-key', model: 'openai:gpt-4o', apiKey: 'sk-key-\u{1F511}abc' },
    });
    expect(created.response.status).toBe(201);
    expect(created.data!.apiKeyLast4).toBe('\u{1F511}abc');
    const read = await sdk.getModel({
      client: bob.client,
      path: { account: 'bob', modelHandle: 'emoji-key' },
    });
    expect(read.data).toEqual(created.data);
    expect((await storedKey(created.data!.id)).api_key_last4).toBe('\u{1F511}abc');
  });

  it('keeps one default model per account', async () => {
    const create = (handle: string, isDefault: boolean) =>
      sdk.createModel({
        client: bob.client,
        path: { account: 'bob' },
        body: { handle, model: 'openai:gpt-4o-mini', isDefault },
      });
    expect((await create('first', true)).data?.isDefault).toBe(true);
    expect((await create('second', true)).data?.isDefault).toBe(true);
    const defaults = async () =>
      (await sdk.listModels({ client: bob.client, path: { account: 'bob' } }))
        .data!.items.filter((m) => m.isDefault)
        .map((m) => m.handle);
    expect(await defaults()).toEqual(['second']);

    const back = await sdk.updateModel({
      client: bob.client,
      path: { account: 'bob', modelHandle: 'first' },
      body: { isDefault: true },
    });
    expect(back.data?.isDefault).toBe(true);
    expect(await defaults()).toEqual(['first']);

    const none = await sdk.updateModel({
      client: bob.client,
      path: { account: 'bob', modelHandle: 'first' },
      body: { isDefault: false },
    });
    expect(none.data?.isDefault).toBe(false);
    expect(await defaults()).toEqual([]);
  });

  it('answers a duplicate handle with 409 and keeps the first model', async () => {
    const body = { handle: 'dup', model: 'openai:gpt-4o' };
    expect(
      (await sdk.createModel({ client: ada.client, path: { account: 'ada' }, body })).response.status,
    ).toBe(201);
    const again = await sdk.createModel({
      client: ada.client,
      path: { account: 'ada' },
      body: { ...body, model: 'mistral:large' },
    });
    expect(again.response.status).toBe(409);
    const list = await sdk.listModels({ client: ada.client, path: { account: 'ada' } });
    expect(list.data!.items.filter((m) => m.handle === 'dup').map((m) => m.model)).toEqual(['openai:gpt-4o']);
  });

  it('accepts https and loopback http base URLs, and updates or removes them', async () => {
    const local = await sdk.createModel({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'local', model: 'ollama:llama3.1:8b', baseUrl: 'http://127.0.0.1:11434/v1' },
    });
    expect(local.response.status).toBe(201);
    expect(local.data?.baseUrl).toBe('http://127.0.0.1:11434/v1');
    const moved = await sdk.updateModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'local' },
      body: { baseUrl: 'https://llm.example.com/v1', model: 'openai:gpt-4o' },
    });
    expect(moved.data).toMatchObject({ baseUrl: 'https://llm.example.com/v1', model: 'openai:gpt-4o' });
    const removed = await sdk.updateModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'local' },
      body: { baseUrl: null },
    });
    expect(removed.data?.baseUrl).toBeNull();
  });

  it('rejects invalid input on every write with 400 and changes nothing', async () => {
    const before = await modelCount('ada');
    const invalidCreates = [
      {
        body: { handle: 'x1', model: 'openai:gpt-4o', baseUrl: 'http://llm.example.com/v1' },
        pointer: '/body/baseUrl',
      },
      {
        body: { handle: 'x2', model: 'openai:gpt-4o', baseUrl: 'https://me:pw@llm.example.com' },
        pointer: '/body/baseUrl',
      },
      { body: { handle: 'x3', model: 'gpt-4o' }, pointer: '/body/model' },
      { body: { handle: 'x4', model: 'openai:gpt-4o', apiKey: 'short' }, pointer: '/body/apiKey' },
      { body: { handle: 'Bad Handle', model: 'openai:gpt-4o' }, pointer: '/body/handle' },
      { body: { handle: 'x5', model: 'openai:gpt-4o', extra: 1 }, pointer: '/body/extra' },
    ];
    for (const { body, pointer } of invalidCreates) {
      const r = await sdk.createModel({ client: ada.client, path: { account: 'ada' }, body: body as never });
      expect(r.response.status, JSON.stringify(body)).toBe(400);
      expect(r.response.headers.get('content-type')).toContain('application/problem+json');
      expect((r.error as { errors: { pointer: string }[] }).errors.map((e) => e.pointer)).toContain(pointer);
    }
    expect(await modelCount('ada')).toBe(before);

    const target = await sdk.createModel({
      client: ada.client,
      path: { account: 'ada' },
      body: { handle: 'stable', model: 'openai:gpt-4o', apiKey: 'sk-stable-key-0000' },
    });
    const invalidUpdates = [{}, { baseUrl: 'ftp://llm.example.com' }, { model: 'nope' }, { apiKey: '' }];
    for (const body of invalidUpdates) {
      const r = await sdk.updateModel({
        client: ada.client,
        path: { account: 'ada', modelHandle: 'stable' },
        body: body as never,
      });
      expect(r.response.status, JSON.stringify(body)).toBe(400);
    }
    const after = (await sdk.listModels({ client: ada.client, path: { account: 'ada' } })).data!.items.find(
      (m) => m.handle === 'stable',
    );
    expect(after).toEqual(target.data);

    const badDelete = await sdk.deleteModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'Not_A_Handle' },
    });
    expect(badDelete.response.status).toBe(400);
    const unknown = await sdk.deleteModel({
      client: ada.client,
      path: { account: 'ada', modelHandle: 'missing' },
    });
    expect(unknown.response.status).toBe(404);
    expect(await modelCount('ada')).toBe(before + 1);
  });

  it('deletes a model and its stored key', async () => {
    const created = await sdk.createModel({
      client: bob.client,
      path: { account: 'bob' },
      body: { handle: 'gone', model: 'openai:gpt-4o', apiKey: 'sk-to-be-deleted-1111' },
    });
    const deleted = await sdk.deleteModel({
      client: bob.client,
      path: { account: 'bob', modelHandle: 'gone' },
    });
    expect(deleted.response.status).toBe(204);
    expect(await storedKey(created.data!.id)).toBeUndefined();
    const again = await sdk.deleteModel({
      client: bob.client,
      path: { account: 'bob', modelHandle: 'gone' },
    });
    expect(again.response.status).toBe(404);
    const read = await sdk.getModel({ client: bob.client, path: { account: 'bob', modelHandle: 'gone' } });
    expect(read.response.status).toBe(404);
  });

  it("hides another user's private account behind 404, and needs the model scopes", async () => {
    expect((await sdk.listModels({ client: bob.client, path: { account: 'ada' } })).response.status).toBe(
      404,
    );
    const write = await sdk.createModel({
      client: bob.client,
      path: { account: 'ada' },
      body: { handle: 'intruder', model: 'openai:gpt-4o' },
    });
    expect(write.response.status).toBe(404);
    const read = await sdk.getModel({ client: bob.client, path: { account: 'ada', modelHandle: 'claude' } });
    expect(read.response.status).toBe(404);
    const remove = await sdk.deleteModel({
      client: bob.client,
      path: { account: 'ada', modelHandle: 'gpt' },
    });
    expect(remove.response.status).toBe(404);
    expect(
      (await sdk.listModels({ client: ada.client, path: { account: 'ada' } })).data!.items.map(
        (m) => m.handle,
      ),
    ).toContain('gpt');

    const reader = await createTestUser(service, 'reader', ['model:read']);
    expect(
      (await sdk.listModels({ client: reader.client, path: { account: 'reader' } })).response.status,
    ).toBe(200);
    const denied = await sdk.createModel({
      client: reader.client,
      path: { account: 'reader' },
      body: { handle: 'm1', model: 'openai:gpt-4o' },
    });
    expect(denied.response.status).toBe(403);
    expect(denied.response.headers.get('www-authenticate')).toContain('scope="model:write"');
    const blind = await createTestUser(service, 'blind', ['project:read']);
    const unseen = await sdk.listModels({ client: blind.client, path: { account: 'blind' } });
    expect(unseen.response.status).toBe(403);
    expect(unseen.response.headers.get('www-authenticate')).toContain('scope="model:read"');
  });
});
