import { type PreparedStatement, prepared } from '../db/prepared.ts';
import { UUID } from '../lib/ids.ts';
import { problems } from './problem.ts';

// Keyset pagination on the time-ordered UUID primary key: stable under inserts and deletes, and a page
// costs one index range scan however deep the client has paged.

export interface PageRequest {
  limit: number;
  afterId: string | undefined;
}

export function pageRequest(query: { cursor?: string; limit?: number }): PageRequest {
  const limit = query.limit ?? 20;
  if (!query.cursor) return { limit, afterId: undefined };
  const afterId = Buffer.from(query.cursor, 'base64url').toString('utf8');
  // Only the ids this service hands out: PostgreSQL would refuse anything else with a driver error.
  if (!UUID.test(afterId)) throw problems.badRequest('The cursor is not valid.', '/query/cursor');
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
    nextCursor: more ? Buffer.from(items.at(-1)!.id).toString('base64url') : null,
  };
}
