import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AccountModel } from '../../src/db/entities/index.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { createFieldCipher } from '../../src/lib/field-encryption.ts';
import { useTestOrm } from '../support/orm.ts';

const db = useTestOrm();
const cipher = createFieldCipher(randomBytes(32));

describe('field encryption', () => {
  it('round-trips, and what is stored is not the plaintext', async () => {
    const apiKey = 'sk-live-0123456789abcdef';
    const em = db.orm().em.fork();
    const { account } = createUserWithAccount(em, { handle: 'crypto', displayName: 'C' });
    const model = em.create(AccountModel, { account, handle: 'main', model: 'openai:gpt-4o' });
    model.apiKeyEncrypted = cipher.encrypt(apiKey, model.id);
    model.apiKeyLast4 = apiKey.slice(-4);
    await em.flush();

    const [row] = await db
      .orm()
      .em.fork()
      .getConnection()
      .execute<{ api_key_encrypted: Buffer }[]>('select api_key_encrypted from account_models where id = ?', [
        model.id,
      ]);
    expect(row!.api_key_encrypted.includes(Buffer.from(apiKey))).toBe(false);
    expect(row!.api_key_encrypted.includes(Buffer.from(apiKey.slice(0, 8)))).toBe(false);
    expect(cipher.decrypt(row!.api_key_encrypted, model.id)).toBe(apiKey);
  });

  it('refuses a ciphertext moved to another row or tampered with', () => {
    const stored = cipher.encrypt('secret', 'row-a');
    expect(() => cipher.decrypt(stored, 'row-b')).toThrow();
    const tampered = Buffer.from(stored);
    tampered[tampered.length - 1]! ^= 1;
    expect(() => cipher.decrypt(tampered, 'row-a')).toThrow();
    expect(() => createFieldCipher(randomBytes(16))).toThrow(/32 bytes/);
  });

  it('uses a fresh IV each time, across refills of its pool of random IVs', () => {
    expect(cipher.encrypt('same', 'row').equals(cipher.encrypt('same', 'row'))).toBe(false);
    const ivs = Array.from({ length: 1000 }, () =>
      cipher.encrypt('same', 'row').subarray(1, 13).toString('hex'),
    );
    expect(new Set(ivs).size).toBe(ivs.length);
  });

  it('reads what the plain AES-256-GCM layout holds (values stored before this version decrypt)', () => {
    const key = randomBytes(32);
    const iv = randomBytes(12);
    const plain = createCipheriv('aes-256-gcm', key, iv);
    plain.setAAD(Buffer.from('row-a'));
    const body = Buffer.concat([plain.update('stored earlier', 'utf8'), plain.final()]);
    const stored = Buffer.concat([Buffer.from([1]), iv, plain.getAuthTag(), body]);
    expect(createFieldCipher(key).decrypt(stored, 'row-a')).toBe('stored earlier');
  });
});
