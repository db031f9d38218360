import { randomBytes } from 'node:crypto';
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

  it('uses a fresh IV each time', () => {
    expect(cipher.encrypt('same', 'row').equals(cipher.encrypt('same', 'row'))).toBe(false);
  });
});
