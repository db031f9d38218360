import { type PreparedStatement, prepared } from '../db/prepared.ts';
import { UUID } from '../lib/ids.ts';
import { problems } from './problem.ts';

// Keyset pagination on the time-ordered UUID primary key: stable under inserts and deletes, and a page
// costs one index range scan however deep the client has paged.

export interface PageRequest {
  limit: number;
  afterId: string | undefined;
}

/** A cursor as the service hands it out: the text it stands for, in unpadded base64url. */
export const encodeCursor = (text: string) => Buffer.from(text).toString('base64url');

/**
 * The text of a cursor, read only when it is exactly what encodeCursor makes of that text: Node's base64
 * decoder skips characters it does not know and padding, so `!abc`, `abc=` and `abc` would otherwise read
 * alike. Anything else answers 400 at /query/cursor.
 */
export function decodeCursor(cursor: string, valid: (text: string) => boolean): string {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (encodeCursor(text) !== cursor || !valid(text)) {
    throw problems.badRequest('The cursor is not valid.', '/query/cursor');
  }
  return text;
}

export function pageRequest(query: { cursor?: string; limit?: number }): PageRequest {
  const limit = query.limit ?? 20;
  if (!query.cursor) return { limit, afterId: undefined };
  // Only the ids this service hands out (PostgreSQL writes them in lower case): PostgreSQL would refuse
  // anything else with a driver error.
  const afterId = decodeCursor(query.cursor, (id) => UUID.test(id) && id === id.toLowerCase());
  return { limit, afterId };
}

/** A page's statement and its values, as `op.sql` takes them. */
export interface PageStatement {
  statement: PreparedStatement;
  params: unknown[];
}

/**
 * The prepared statements of a keyset-paginated list, made once: `select` ends in its where clause with the
 * owner as its one value; the first page and each following one are ordered by `idColumn` and fetch
 * limit + 1 rows, as `page` expects.
 */
export function keysetPages(
  select: string,
  idColumn: string,
): (owner: string, request: PageRequest) => PageStatement {
  const first = prepared(`${select} order by ${idColumn} limit ?`);
  const after = prepared(`${select} and ${idColumn} > ? order by ${idColumn} limit ?`);
  return (owner, request) =>
    request.afterId
      ? { statement: after, params: [owner, request.afterId, request.limit + 1] }
      : { statement: first, params: [owner, request.limit + 1] };
}

/** `rows` must have been fetched with limit + 1, ordered by id ascending. */
export function page<T extends { id: string }, U>(rows: T[], request: PageRequest, serialize: (row: T) => U) {
  const items = rows.slice(0, request.limit);
  const more = rows.length > request.limit;
  return {
    items: items.map(serialize),
    nextCursor: more ? encodeCursor(items.at(-1)!.id) : null,
  };
}
