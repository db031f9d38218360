// What a database dump would give away: no authorization code, access token or refresh token that works.

import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/orm.ts';
import { createRunPrepared } from '../../src/db/prepared.ts';
import { createFieldCipher } from '../../src/lib/field-encryption.ts';
import { createAdapterFactory } from '../../src/oauth/adapter.ts';
import { deleteExpiredOidcRows } from '../../src/oauth/cleanup.ts';
import { resourceFor } from '../../src/oauth/index.ts';
import { useOAuthService } from '../support/suite.ts';
import { CookieJar, connectPublicClient, sql, tokenRequest, uniqueHandle } from './helpers.ts';

const service = useOAuthService();

describe('OAuth state at rest', () => {
  it('keeps codes and tokens only as hashes, and they still work', async () => {
    const resource = resourceFor('rest', service.config.baseUrl);
    const { client, code, tokens } = await connectPublicClient(
      service,
      new CookieJar(),
      { handle: uniqueHandle(), create: true },
      { scope: 'user:read', resource },
      { exchange: { resource } },
    );

    const rows = (await sql(service, `select model, id, payload::text as payload from oidc_models`)) as {
      model: string;
      id: string;
      payload: string;
    }[];
    expect(rows.map((r) => r.model)).toEqual(
      expect.arrayContaining(['AuthorizationCode', 'AccessToken', 'RefreshToken']),
    );
    const dump = rows.map((r) => `${r.id} ${r.payload}`).join('\n');
    for (const secret of [code, tokens.access_token, tokens.refresh_token])
      expect(dump).not.toContain(secret);

    const me = await fetch(`${service.url}/api/v1/user`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.status).toBe(200);
    const refreshed = await tokenRequest(service, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: client.client_id,
      resource,
    });
    expect(refreshed.status).toBe(200);
  });
});

describe('expired OAuth rows', () => {
  it('writes nothing when a model is saved again unchanged, and the change when it changed', async () => {
    const orm = await openDatabase(service.database.url);
    try {
      const adapter = createAdapterFactory({
        orm,
        runPrepared: createRunPrepared(orm, true),
        cipher: createFieldCipher(service.config.fieldEncryptionKey),
        refreshGraceSeconds: 0,
      })('Session');
      const id = `unchanged-${uniqueHandle()}`;
      const payload = {
        jti: id,
        uid: `uid-${id}`,
        exp: Math.floor(Date.now() / 1000) + 600,
        kind: 'Session',
      };
      // xmin is the transaction that wrote the row's current version: a rewrite changes it.
      const version = async () =>
        (
          (await sql(service, `select xmin::text as v from oidc_models where model = 'Session' and id = $1`, [
            id,
          ])) as { v: string }[]
        )[0]!.v;
      await adapter.upsert(id, payload, 600);
      const written = await version();
      await adapter.upsert(id, { ...payload }, 600);
      expect(await version()).toBe(written);
      await adapter.upsert(id, { ...payload, accountId: 'someone' }, 600);
      expect(await version()).not.toBe(written);
      expect((await adapter.find(id))?.accountId).toBe('someone');
    } finally {
      await orm.close();
    }
  });

  it('are swept in batches, and nothing unexpired or without expiry is touched', async () => {
    // 2,100 expired rows span three batches of 1,000; the live and never-expiring rows must survive.
    await sql(
      service,
      `insert into oidc_models (model, id, payload, expires_at)
       select 'Interaction', 'sweep-expired-' || n, '{}'::jsonb, now() - interval '1 minute'
       from generate_series(1, 2100) as n`,
    );
    await sql(
      service,
      `insert into oidc_models (model, id, payload, expires_at) values
         ('Interaction', 'sweep-live', '{}'::jsonb, now() + interval '1 hour'),
         ('Client', 'sweep-forever', '{}'::jsonb, null)`,
    );
    const before = (await sql(service, 'select count(*)::int as n from oidc_models')) as { n: number }[];

    const orm = await openDatabase(service.database.url);
    try {
      expect(await deleteExpiredOidcRows(orm)).toBe(2100);
      expect(await deleteExpiredOidcRows(orm)).toBe(0);
    } finally {
      await orm.close();
    }

    const after = (await sql(service, 'select count(*)::int as n from oidc_models')) as { n: number }[];
    expect(after[0]?.n).toBe((before[0]?.n ?? 0) - 2100);
    const kept = (await sql(service, `select id from oidc_models where id like 'sweep-%' order by id`)) as {
      id: string;
    }[];
    expect(kept.map((r) => r.id)).toEqual(['sweep-forever', 'sweep-live']);
  });
});
