import type { EntityName } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { isoTimestamp } from '../db/columns.ts';
import { type PreparedStatement, prepared } from '../db/prepared.ts';
import { userHandles } from '../domain/users.ts';
import {
  assertIfMatch,
  assertIfNoneMatch,
  flushUnlessRaced,
  ifMatchHolds,
  notModified,
  versionEtag,
} from './etag.ts';
import { type PageRequest, pageRequest } from './pagination.ts';
import type { NotModifiedResponse, OperationContext } from './pipeline.ts';
import { problems } from './problem.ts';

// Voice and glossary are append-only histories per account: a save adds version current + 1 and never
// touches an earlier row. The unique (account, version) constraint settles two saves that race for the
// same number; everything here is shared by both resources so they behave identically.

export interface VersionRow {
  id: string;
  version: number;
  changeNote: string;
  author?: { id: string } | null;
  createdAt: Date;
}

export interface History<T extends VersionRow> {
  entity: EntityName<T>;
  /** How messages name the resource: "voice", "glossary". */
  noun: string;
  /** The operation that saves a version, named in the "nothing saved yet" message. */
  saveOperation: string;
  /** The unique (account, version) constraint of the table. */
  uniqueConstraint: string;
  /** The table, for the plain read of a version (findVersionSummary). */
  table: string;
  /**
   * The columns a read of a version shows besides its number, note, date and author, as a select list
   * (`v.` the version's row, aliased to the field names); findVersionSummary reads them with the version.
   */
  readColumns?: string;
}

/**
 * The reads of a version history that every read of the resource sends (the current version's number for
 * a conditional read or a save's If-Match, the version a read shows): prepared, made once per history.
 */
interface VersionStatements {
  latest: PreparedStatement;
  current: PreparedStatement;
  named: PreparedStatement;
  /** A page of the history after a version number, with each author's handle (versionHistory). */
  page: PreparedStatement;
  /** The version number of the row a cursor names, in this account's history. */
  cursor: PreparedStatement;
}
const statementsByHistory = new WeakMap<object, VersionStatements>();

function statementsOf(history: Pick<History<VersionRow>, 'table' | 'readColumns'>): VersionStatements {
  let statements = statementsByHistory.get(history);
  if (!statements) {
    const { table, readColumns } = history;
    const summary = (where: string) =>
      prepared(`select v.id, v.version, v.change_note as "changeNote", v.created_at as "createdAt",
          ${readColumns ? `${readColumns},` : ''} a.handle as author
        from ${table} v left join accounts a on a.user_id = v.author_id
        where ${where} order by v.version desc limit 1`);
    statements = {
      latest: prepared(`select coalesce(max(version), 0)::int as version from ${table} where account_id = ?`),
      current: summary('v.account_id = ?'),
      named: summary('v.account_id = ? and v.version = ?'),
      page: prepared(`select v.id, v.version, v.change_note as "changeNote",
          ${isoTimestamp('v.created_at')} as "createdAt", a.handle as author
        from ${table} v left join accounts a on a.user_id = v.author_id
        where v.account_id = ? and v.version > ? order by v.version limit ?`),
      cursor: prepared(`select version from ${table} where id = ? and account_id = ?`),
    };
    statementsByHistory.set(history, statements);
  }
  return statements;
}

async function latestVersion<T extends VersionRow>(
  op: OperationContext,
  history: History<T>,
): Promise<number> {
  const [row] = await op.sql<{ version: number }[]>(statementsOf(history).latest, [op.target!.accountId]);
  return row?.version ?? 0;
}

/** A version as a read shows it: its own fields and its author's handle. */
export interface VersionSummaryRow {
  id: string;
  version: number;
  changeNote: string;
  createdAt: Date;
  author: string | null;
}

/**
 * The version named by the `version` query parameter (or `requested`), or the current one, as one plain
 * statement that brings the author's handle along (and the history's readColumns): no entity to hydrate
 * and no second query for the author, for reads that only show the version. 404 when there is none.
 */
export async function findVersionSummary<T extends VersionRow, Extra extends object = object>(
  op: OperationContext,
  history: History<T>,
  requested: number | undefined = op.query.version === undefined ? undefined : Number(op.query.version),
): Promise<VersionSummaryRow & Extra> {
  const statements = statementsOf(history);
  const [row] = await op.sql<(Omit<VersionSummaryRow & Extra, 'createdAt'> & { createdAt: string | Date })[]>(
    requested ? statements.named : statements.current,
    [op.target!.accountId, ...(requested ? [requested] : [])],
  );
  if (!row) throw noVersion(op, history, requested);
  // MikroORM has the driver hand timestamps over as text.
  return { ...row, createdAt: new Date(row.createdAt) } as VersionSummaryRow & Extra;
}

function noVersion(
  op: OperationContext,
  history: Pick<History<VersionRow>, 'noun' | 'saveOperation'>,
  requested: number | undefined,
) {
  const handle = op.target!.handle;
  return problems.notFound(
    requested
      ? `"${handle}" has no ${history.noun} version ${requested}.`
      : `No ${history.noun} has been saved for "${handle}" yet; ${history.saveOperation} saves the first version.`,
  );
}

/**
 * The 304 for a conditional read of the current version (no `version` asked for) whose If-None-Match names
 * it: one small query instead of loading the document. Undefined: read the document.
 */
export async function unchangedSince<T extends VersionRow>(
  op: OperationContext,
  history: History<T>,
): Promise<NotModifiedResponse | undefined> {
  if (op.ifNoneMatch === undefined || op.query.version !== undefined) return undefined;
  const current = await latestVersion(op, history);
  return notModified(op, current ? versionEtag(op.target!.accountId, current) : null);
}

/**
 * The number the next save gets, after checking If-Match and If-None-Match against the current version.
 * Saves of one account's history take turns (a lock held to the end of the write's transaction), so each
 * reads the version the one before it committed: without If-Match each is added on top of the last, and an
 * edit by term applies to the entries as they are then, instead of one of two saves at the same moment
 * losing with 409. The unique (account, version) constraint stays the last line (`flushNewVersion`).
 */
export async function nextVersion<T extends VersionRow>(
  op: OperationContext,
  history: History<T>,
  alreadyApplied?: (current: number) => Promise<boolean>,
): Promise<number> {
  await takeTurn(op, history.table);
  const current = await latestVersion(op, history);
  const currentTag = current ? versionEtag(op.target!.accountId, current) : null;
  // A stale If-Match on an edit that would store nothing new is that edit made before (a retry after a lost
  // answer): asked only when the condition fails.
  const applied =
    alreadyApplied !== undefined &&
    current > 0 &&
    !ifMatchHolds(op, currentTag) &&
    (await alreadyApplied(current));
  assertIfMatch(op, currentTag, history.noun, applied);
  assertIfNoneMatch(op, currentTag, history.noun);
  return current + 1;
}

/**
 * Waits for the account's turn at `what` (a version history's table, or another versioned row), held to the
 * end of the write's transaction: writes at the same moment then each read what the one before committed.
 */
export function takeTurn(op: OperationContext, what: string): Promise<unknown> {
  return op.sql(SAVE_TURN, [what, op.target!.accountId], 'run');
}

/** One turn per resource and account; a hash collision only makes two saves wait for each other. */
const SAVE_TURN = `select pg_advisory_xact_lock(hashtext('localization-service:' || ?), hashtext(?))`;

/** Writes the new version; a concurrent save that took the same number first makes this one lose. */
export function flushNewVersion<T extends VersionRow>(op: OperationContext, history: History<T>) {
  return flushUnlessRaced(op, history.uniqueConstraint, history.noun);
}

/**
 * One page of the history, oldest first. Ordered by version number, not by id: ids are time-ordered
 * only to the millisecond, and versions are the order users mean. The cursor is still the opaque id of
 * the last row, as in every other list.
 */
export async function versionHistory<T extends VersionRow>(
  op: OperationContext,
  history: History<T>,
): Promise<{ rows: HistoryRow[]; request: PageRequest }> {
  const accountId = op.target!.accountId;
  const statements = statementsOf(history);
  const request = pageRequest(op.query, history.noun, accountId);
  let afterVersion = 0;
  if (request.afterId) {
    const [after] = await op.sql<{ version: number }[]>(statements.cursor, [request.afterId, accountId]);
    if (!after) throw problems.badRequest('The cursor is not valid.', '/query/cursor');
    afterVersion = after.version;
  }
  const rows = await op.sql<HistoryRow[]>(statements.page, [accountId, afterVersion, request.limit + 1]);
  return { rows, request };
}

/** A version as the history lists it, read as a plain row with its author's handle. */
export interface HistoryRow {
  id: string;
  version: number;
  changeNote: string;
  /** ISO 8601, formatted by PostgreSQL. */
  createdAt: string;
  author: string | null;
}

export async function authorHandle(em: EntityManager, row: VersionRow): Promise<string | null> {
  const id = row.author?.id;
  return id ? ((await userHandles(em, [id])).get(id) ?? null) : null;
}

/** The fields every history item has. */
export function versionSummary(row: HistoryRow) {
  return {
    version: row.version,
    changeNote: row.changeNote,
    author: row.author,
    createdAt: row.createdAt,
  };
}
