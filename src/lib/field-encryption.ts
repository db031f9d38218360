import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// Secrets we must give back to ourselves later (model API keys, upstream client secrets) are stored as
// AES-256-GCM: [version byte][12-byte IV][16-byte tag][ciphertext]. The version byte leaves room for
// key rotation; the associated data binds a ciphertext to its row so it cannot be moved to another.
const VERSION = 1;

export interface FieldCipher {
  encrypt(plaintext: string, associatedData: string): Buffer;
  decrypt(stored: Buffer, associatedData: string): string;
}

export function createFieldCipher(key: Buffer): FieldCipher {
  if (key.length !== 32) throw new Error('field encryption key must be 32 bytes');
  return {
    encrypt(plaintext, associatedData) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(associatedData));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
    },
    decrypt(stored, associatedData) {
      if (stored[0] !== VERSION) throw new Error('unknown field encryption version');
      const decipher = createDecipheriv('aes-256-gcm', key, stored.subarray(1, 13));
      decipher.setAAD(Buffer.from(associatedData));
      decipher.setAuthTag(stored.subarray(13, 29));
      return Buffer.concat([decipher.update(stored.subarray(29)), decipher.final()]).toString('utf8');
    },
  };
}
