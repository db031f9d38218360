// Development only: secrets generated on the first run and kept in the data folder (mode 0600),
// so a newcomer needs no setup and restarts keep sessions, tokens and encrypted fields readable.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DevSecrets {
  cookieKeys: string[];
  signingJwks: { keys: Record<string, unknown>[] };
  fieldEncryptionKey: string;
}

export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as DevSecrets;
  mkdirSync(dataDir, { recursive: true });
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  const secrets: DevSecrets = {
    cookieKeys: [randomBytes(32).toString('base64url')],
    signingJwks: { keys: [{ ...jwk, alg: 'ES256', use: 'sig', kid: randomBytes(8).toString('hex') }] },
    fieldEncryptionKey: randomBytes(32).toString('base64'),
  };
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  return secrets;
}
