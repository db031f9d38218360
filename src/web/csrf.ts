// CSRF tokens for our forms: an HMAC of something only the legitimate browser holds (the interaction's
// id from its httpOnly cookie, or the session id), so a page on another site cannot forge a POST.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface Csrf {
  token(purpose: string, binding: string): string;
  verify(purpose: string, binding: string, presented: unknown): boolean;
}

export function createCsrf(keys: readonly string[]): Csrf {
  const mac = (key: string, purpose: string, binding: string) =>
    createHmac('sha256', key).update(`${purpose}\0${binding}`).digest('base64url');
  return {
    token: (purpose, binding) => mac(keys[0]!, purpose, binding),
    // Every configured key verifies, so rotating cookie keys does not break forms already on screen.
    verify(purpose, binding, presented) {
      if (typeof presented !== 'string' || presented.length === 0) return false;
      const given = Buffer.from(presented);
      return keys.some((key) => {
        const expected = Buffer.from(mac(key, purpose, binding));
        return expected.length === given.length && timingSafeEqual(expected, given);
      });
    },
  };
}
