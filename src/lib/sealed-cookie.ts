// Values a browser carries for us and must neither read nor change (the pending upstream sign-in, with its
// PKCE verifier and nonce): an encrypted JWT (jose, `dir` + A256GCM) that expires. The first cookie key
// seals; every configured key opens, so rotating COOKIE_KEYS does not break a sign-in in progress.
import { createHash } from 'node:crypto';
import { EncryptJWT, type JWTPayload, jwtDecrypt } from 'jose';

export interface CookieSealer<T extends JWTPayload> {
  seal(value: T, ttlSeconds: number): Promise<string>;
  /** The value, or undefined when the cookie is missing, forged, sealed for another purpose or expired. */
  open(sealed: string | undefined): Promise<T | undefined>;
}

export function createCookieSealer<T extends JWTPayload>(
  keys: readonly string[],
  purpose: string,
): CookieSealer<T> {
  // One 256-bit key per cookie key and purpose, so a value sealed for one purpose never opens for another.
  const secrets = keys.map((key) => createHash('sha256').update(`${purpose}\0${key}`).digest());
  return {
    seal: (value, ttlSeconds) =>
      new EncryptJWT(value)
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
        .setExpirationTime(`${ttlSeconds}s`)
        .encrypt(secrets[0]!),
    async open(sealed) {
      if (!sealed) return undefined;
      for (const secret of secrets) {
        try {
          return (await jwtDecrypt<T>(sealed, secret, { keyManagementAlgorithms: ['dir'] })).payload;
        } catch {
          // Not this key (or not valid at all): try the next one.
        }
      }
      return undefined;
    },
  };
}
