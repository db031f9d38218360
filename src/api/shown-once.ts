/**
 * The headers of an answer that carries a secret shown once (a new account token, an invitation's accept
 * token, a domain's TXT value): no cache, a browser's or a proxy's, may keep a copy of it.
 */
export const SHOWN_ONCE_HEADERS = { 'Cache-Control': 'no-store' } as const;
