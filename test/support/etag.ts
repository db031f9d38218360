/**
 * The shape of an ETag the service writes: `v` (a saved version) or `r` (a settings revision), its number,
 * and eight hex digits that tell the account apart (src/api/etag.ts). Tests read the tag itself from a
 * response and check its shape here, so the mark's formula is written once, in the service.
 */
export const tagPattern = (kind: 'v' | 'r', n: number) => new RegExp(`^"${kind}${n}\\.[0-9a-f]{8}"$`);
