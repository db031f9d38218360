import { hash } from 'node:crypto';
import { type PreparedStatement, prepared } from '../db/prepared.ts';
import { UUID } from '../lib/ids.ts';
import { problems } from './problem.ts';

// Keyset pagination on the time-ordered UUID primary key: stable under inserts and deletes, and a page
// costs one index range scan however deep the client has paged.

export interface PageRequest {
  limit: number;
  afterId: string | undefined;
  /** The list these pages belong to (its name and owner), which its cursors are bound to. */
  list: string;
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

/**
 * A short, fixed-length tag of a list: a cursor carries it, so one handed out by another list (another
 * collection, or the same collection of another account) is refused instead of silently paging through the
 * wrong rows, often to an empty page an agent would take for an empty list. It hides nothing and proves
 * nothing: a caller only ever pages within what it may read, whatever the cursor says.
 */
const listTag = (list: string) => hash('sha256', list, 'base64url').slice(0, 11);

// `<list tag>.<id of the last row>`, the id as PostgreSQL writes it (lower case).
const PAGE_CURSOR = /^([A-Za-z0-9_-]{11})\.(.{36})$/;

/**
 * The page a list's request asks for. `list` names the collection and `owner` whose it is (the account,
 * the organization, the caller), which together are what a cursor is bound to.
 */
export function pageRequest(
  query: { cursor?: string; limit?: number },
  list: string,
  owner: string,
): PageRequest {
  const limit = query.limit ?? 20;
  const request: PageRequest = { limit, afterId: undefined, list: `${list}\0${owner}` };
  if (!query.cursor) return request;
  // Only the ids this service hands out (PostgreSQL writes them in lower case): PostgreSQL would refuse
  // anything else with a driver error.
  const text = decodeCursor(query.cursor, (text) => {
    const id = PAGE_CURSOR.exec(text)?.[2];
    return id !== undefined && UUID.test(id) && id === id.toLowerCase();
  });
  const [, tag, afterId] = PAGE_CURSOR.exec(text)!;
  if (tag !== listTag(request.list)) {
    throw problems.badRequest(
      "The cursor belongs to another list (another collection, or another account's); send each cursor back to the list that handed it out, or start again without one.",
      '/query/cursor',
    );
  }
  request.afterId = afterId;
  return request;
}

/**
 * Whose a caller-wide list is (listAccounts, listOrganizations): the caller's, narrowed to one organization
 * for a token bound to it, which so pages through a list of its own.
 */
export const callerListOwner = (caller: { userId: string; restrictedToAccountId?: string | null }) =>
  caller.restrictedToAccountId ? `${caller.userId}/${caller.restrictedToAccountId}` : caller.userId;

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
    nextCursor: more ? encodeCursor(`${listTag(request.list)}.${items.at(-1)!.id}`) : null,
  };
}
