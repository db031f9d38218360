/**
 * The shape of an ETag the service writes: `v` (a saved version), `r` (a settings revision), `p` or `o` (a
 * project's or an organization's revision), its number, and eight hex digits that tell the account (or the
 * project) apart (src/api/etag.ts). Tests read the tag itself from a response and check its shape here, so
 * the mark's formula is written once, in the service.
 */
export const tagPattern = (kind: 'v' | 'r' | 'p' | 'o', n: number) =>
  new RegExp(`^"${kind}${n}\\.[0-9a-f]{8}"$`);
