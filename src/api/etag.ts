import { hash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { constraintName } from './constraint-messages.ts';
import type { NotModifiedResponse, OperationContext } from './pipeline.ts';
import { type Problem, problems } from './problem.ts';

// Optimistic concurrency for the resources several people edit (voice, glossary, glossary settings,
// projects, organizations): reads carry a strong ETag naming the stored version, writes may send it back in
// If-Match (RFC 9110 §13.1.1), and a write based on anything but the current version changes nothing and
// answers 412.

// A tag names the version and the account it belongs to. Version numbers start at 1 in every account, so
// `"v3"` alone was also the tag of another account's third save: an organization deleted or renamed and its
// handle taken by a new one, and a client (or an HTTP cache, which keys by URL) still holding the old tag
// was told 304 for the new account's document and went on using the old one.

/** Eight hex digits of the account id's SHA-256: stable, and the same version of two accounts differs. */
const accountMark = (accountId: string) => hash('sha256', accountId, 'hex').slice(0, 8);

/** The ETag of a saved voice or glossary version of an account (`"v3.1f2e3d4c"`). */
export const versionEtag = (accountId: string, version: number) => `"v${version}.${accountMark(accountId)}"`;
/** The ETag of an account's edited-in-place settings row at a given revision (`"r3.1f2e3d4c"`). */
export const revisionEtag = (accountId: string, revision: number) =>
  `"r${revision}.${accountMark(accountId)}"`;
/** The ETag of an organization (its account's name and visibility) at a revision (`"o3.1f2e3d4c"`). */
export const organizationEtag = (accountId: string, revision: number) =>
  `"o${revision}.${accountMark(accountId)}"`;
/**
 * The ETag of a project at a revision (`"p3.5e6f7a8b"`). Its mark is the last eight hex digits of the
 * project's id, random in every id, instead of a hash: a project deleted and made again under the same
 * handle starts at revision 1 with another id, and a list of projects computes no hash per item.
 */
export const projectEtag = (projectId: string, revision: number) => `"p${revision}.${projectId.slice(-8)}"`;

/**
 * Whether `tag` (quoted, strong) names `current` as a precondition of a write. A tag of the earlier form, the
 * number alone (`"v3"`), names it too: tags read before the upgrade that added the mark, and during a rolling
 * upgrade tags that instances not yet upgraded hand out, go on working (a later release may drop them;
 * docs/operations.md). A conditional read does not take them (notModified): the document is then sent
 * again, which costs a read, where a 304 could keep a cache on another account's document.
 */
export const namesForWrite = (tag: string, current: string) =>
  tag === current || (/^"[vr]/.test(current) && tag === current.replace(/\.[0-9a-f]{8}"$/, '"'));

/** A strong tag as this service writes it, in either form (namesForWrite). */
const TAG_SHAPE = /^"(?:[vr]\d+(?:\.[0-9a-f]{8})?|[po]\d+\.[0-9a-f]{8})"$/;

/**
 * The entity tags of an If-Match value, or `*`. Bare tags (`v3.1f2e3d4c`) are accepted quoted because agents
 * copy the `etag` field of a body and lose the quotes; weak tags (`W/"…"`) stay weak and never match.
 */
function parseIfMatch(value: string): string[] | '*' {
  const trimmed = value.trim();
  if (trimmed === '*') return '*';
  return trimmed
    .split(',')
    .map((tag) => tag.trim())
    .filter(Boolean)
    .map((tag) => (tag.startsWith('"') || tag.startsWith('W/') ? tag : `"${tag}"`));
}

/** Whether the request's If-Match, if it sent one, names `current` (null: nothing stored yet). */
export function ifMatchHolds(op: Pick<OperationContext, 'ifMatch'>, current: string | null): boolean {
  if (op.ifMatch === undefined) return true;
  const tags = parseIfMatch(op.ifMatch);
  return current !== null && (tags === '*' || tags.some((tag) => namesForWrite(tag, current)));
}

/**
 * Throws 412 when the request sent If-Match and it does not name `current` (null: nothing stored yet,
 * which no precondition matches). Without If-Match the write goes ahead. `alreadyApplied`: the stored state
 * already is what the write asks for, so a failed condition is a write that succeeded before (a retry after
 * a lost answer) and the write goes ahead, changing nothing, as RFC 9110 §13.1.1 allows.
 */
export function assertIfMatch(
  op: Pick<OperationContext, 'ifMatch'>,
  current: string | null,
  what: string,
  alreadyApplied = false,
) {
  if (op.ifMatch === undefined || ifMatchHolds(op, current)) return;
  if (current !== null && alreadyApplied) return;
  const tags = parseIfMatch(op.ifMatch);
  throw problems.preconditionFailed(
    current === null
      ? `Nothing is stored for the ${what} yet, so If-Match ${op.ifMatch} cannot match; send the first save without If-Match.`
      : whyNot(tags as string[], current, op.ifMatch, what),
  );
}

/**
 * Why If-Match `value` (its `tags`) does not name `current`, for an agent to act on: sending a tag again
 * that was never this resource's (weak, mangled, another resource's) would be refused again, however often
 * it reloads.
 */
function whyNot(tags: string[], current: string, value: string, what: string): string {
  const shaped = tags.filter((tag) => TAG_SHAPE.test(tag));
  if (shaped.length === 0) {
    const weak = tags.some((tag) => tag.startsWith('W/')) ? ' (a weak W/ tag never matches)' : '';
    return `Your If-Match ${value} is no etag this service writes${weak}; send the etag exactly as you read it: the ${what} is now ${current}.`;
  }
  if (!shaped.some((tag) => sameResource(tag, current))) {
    return `Your If-Match ${value} is the etag of another resource, not of the ${what}, whose etag is now ${current}; send the etag you read from it.`;
  }
  return `The ${what} changed since you read it: it is now ${current}, your If-Match is ${value}. Reload, reapply your change and retry.`;
}

/**
 * Whether two strong tags this service writes name revisions of one resource: the same kind and the same
 * mark (a tag of the earlier, bare form has none, and is taken as the resource's). A project deleted and
 * made again under its handle is another resource: its tags' mark is its new id's.
 */
export const sameResource = (tag: string, current: string) =>
  TAG_SHAPE.test(tag) && tag[1] === current[1] && (markOf(tag) ?? markOf(current)) === markOf(current);

/** The mark of a tag (`1f2e3d4c` of `"v3.1f2e3d4c"`), or undefined for a tag of the earlier, bare form. */
const markOf = (tag: string) => /\.([0-9a-f]{8})"$/.exec(tag)?.[1];

/**
 * A concurrent writer committed between this request's read and its write. With If-Match the caller's
 * tag is stale now (412); without one there was no precondition to fail, so it is a conflict (409).
 */
export function lostRace(op: Pick<OperationContext, 'ifMatch'>, what: string): Problem {
  const detail = `Someone else saved the ${what} at the same time; nothing was saved. Reload and retry.`;
  return op.ifMatch === undefined ? problems.conflict(detail) : problems.preconditionFailed(detail);
}

/** A representation that carries its `etag` as an answer, with that tag as the ETag header too. */
export function taggedResponse<S extends number, B extends { etag: string }>(
  status: S,
  body: B,
  headers: Record<string, string> = {},
) {
  return { status, headers: { ...headers, ETag: body.etag }, body };
}

/**
 * The revision of a project or account row as stored: the database moves it on an update that changes what
 * the API shows (Migration20261128000000_edit_revisions), so after a flush the entity's own is out of date.
 */
export async function storedRevision(
  op: Pick<OperationContext, 'sql'>,
  table: 'projects' | 'accounts',
  id: string,
): Promise<number> {
  const [row] = await op.sql<{ revision: number }[]>(`select revision from ${table} where id = ?`, [id]);
  return row!.revision;
}

/**
 * Flushes a write whose uniqueness `constraint` is what settles a race (two saves taking the same
 * version number, two first writes of a settings row): violating it means this request lost.
 */
export async function flushUnlessRaced(
  op: Pick<OperationContext, 'ifMatch' | 'em'>,
  constraint: string,
  what: string,
): Promise<void> {
  try {
    await op.em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException && constraintName(error) === constraint) {
      throw lostRace(op, what);
    }
    throw error;
  }
}

/**
 * A conditional read: the 304 to answer when the request's If-None-Match names `current` (null: nothing
 * stored, which no tag names), otherwise undefined and the read goes on. The comparison is weak, as RFC 9110
 * asks of If-None-Match (`W/"…"` names `"…"`), and `*` names any stored version.
 */
export function notModified(
  op: Pick<OperationContext, 'ifNoneMatch'>,
  current: string | null,
): NotModifiedResponse | undefined {
  if (op.ifNoneMatch === undefined || current === null) return undefined;
  const named = namesCurrent(op.ifNoneMatch, (tag) => tag === current);
  return named ? { status: 304, headers: { ETag: current } } : undefined;
}

/**
 * The If-None-Match of a save: `*` saves only when nothing is stored yet (a first save that must not replace
 * one someone made meanwhile), and a tag saves only when it is no longer current (RFC 9110: a write whose
 * If-None-Match names the current version is not performed). Throws 412 when the condition fails.
 */
export function assertIfNoneMatch(
  op: Pick<OperationContext, 'ifNoneMatch'>,
  current: string | null,
  what: string,
) {
  if (op.ifNoneMatch === undefined || current === null) return;
  if (!namesCurrent(op.ifNoneMatch, (tag) => namesForWrite(tag, current))) return;
  throw problems.preconditionFailed(
    op.ifNoneMatch.trim() === '*'
      ? `The ${what} has a saved version already (${current}), and If-None-Match: * saves only the first one. Nothing was saved: read it, reapply your change and retry.`
      : `Your If-None-Match ${op.ifNoneMatch} names the current ${what} (${current}), so nothing was saved.`,
  );
}

/**
 * Whether an If-None-Match value names the current version (`*`, or a tag `matches`): weakly, as RFC 9110
 * compares for it (`W/"…"` names `"…"`).
 */
function namesCurrent(ifNoneMatch: string, matches: (tag: string) => boolean): boolean {
  const tags = parseIfMatch(ifNoneMatch);
  return tags === '*' || tags.some((tag) => matches(tag.replace(/^W\//, '')));
}
