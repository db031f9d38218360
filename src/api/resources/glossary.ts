import { createHash } from 'node:crypto';
import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import {
  GlossarySettings,
  GlossaryVersion,
  type IGlossaryEntry,
  type IGlossarySettings,
  type IGlossaryVersion,
} from '../../db/entities/index.ts';
import { sameEntry, termKey } from '../../domain/glossary-terms.ts';
import { userHandles } from '../../domain/users.ts';
import { canonicalLocale, canonicalLocaleKeys } from '../../domain/validation.ts';
import { uuidv7 } from '../../lib/ids.ts';
import { type JsonArrayText, withJsonField } from '../../lib/spliced-json.ts';
import {
  assertIfMatch,
  assertIfNoneMatch,
  flushUnlessRaced,
  lostRace,
  notModified,
  revisionEtag,
  versionEtag,
} from '../etag.ts';
import { decodeCursor, encodeCursor, page } from '../pagination.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';
import { problems } from '../problem.ts';
import {
  authorHandle,
  findVersionSummary,
  flushNewVersion,
  type History,
  nextVersion,
  takeTurn,
  unchangedSince,
  versionHistory,
  versionSummary,
} from '../versions.ts';

const GLOSSARY: History<IGlossaryVersion> = {
  entity: GlossaryVersion,
  noun: 'glossary',
  saveOperation: 'saveGlossary',
  uniqueConstraint: 'glossary_versions_account_version_unique',
  table: 'glossary_versions',
};

interface EntryInput {
  term: string;
  definition?: string;
  caseSensitive?: boolean;
  doNotTranslate?: boolean;
  forbidden?: boolean;
  translations?: Record<string, string>;
}

type EntryFields = Pick<
  IGlossaryEntry,
  'term' | 'definition' | 'caseSensitive' | 'doNotTranslate' | 'forbidden' | 'translations'
>;

function serializeEntry(entry: EntryFields): Schemas.GlossaryEntry {
  return {
    term: entry.term,
    definition: entry.definition,
    caseSensitive: entry.caseSensitive,
    doNotTranslate: entry.doNotTranslate,
    forbidden: entry.forbidden,
    translations: entry.translations,
  };
}

type VersionFields = Pick<IGlossaryVersion, 'version' | 'changeNote' | 'createdAt'>;

/** A glossary version but its entries. */
function glossaryHead(
  accountId: string,
  row: VersionFields,
  author: string | null,
): Omit<Schemas.Glossary, 'entries'> {
  return {
    version: row.version,
    etag: versionEtag(accountId, row.version),
    changeNote: row.changeNote,
    author,
    createdAt: row.createdAt.toISOString(),
  };
}

function serializeGlossary(
  accountId: string,
  row: VersionFields,
  entries: EntryFields[],
  author: string | null,
): Schemas.Glossary {
  return { ...glossaryHead(accountId, row, author), entries: entries.map(serializeEntry) };
}

/** The most entries a glossary version holds (the whole save's limit, kept by the edits too). */
const MAX_ENTRIES = 5000;

/** Entries in stored form; a term listed twice (in any Unicode form) is reported at its second occurrence. */
function validEntries(entries: EntryInput[]): EntryFields[] {
  const firstIndex = new Map<string, number>();
  return entries.map((entry, i) => {
    const earlier = firstIndex.get(termKey(entry.term));
    if (earlier !== undefined) {
      throw problems.badRequest(
        `The term "${entry.term}" is already entry ${earlier}${entries[earlier]!.term === entry.term ? '' : ' (written in another Unicode form)'}; a glossary lists each term once.`,
        `/body/entries/${i}/term`,
      );
    }
    firstIndex.set(termKey(entry.term), i);
    return {
      term: entry.term,
      definition: entry.definition ?? '',
      caseSensitive: entry.caseSensitive ?? false,
      doNotTranslate: entry.doNotTranslate ?? false,
      forbidden: entry.forbidden ?? false,
      translations: canonicalLocaleKeys(entry.translations ?? {}, `/body/entries/${i}/translations`),
    };
  });
}

/** Translations an entry may hold (GlossaryTranslations' maxProperties in openapi.yaml). */
const MAX_TRANSLATIONS = 200;

/**
 * An edit by term with `merge`: the stored entry with the fields the request sent (`input`, as validated in
 * `sent`), and its translations merged by locale. Without it, an agent adding one translation to an entry
 * replaced the entry whole and dropped its definition and every other translation.
 */
function mergedEntry(stored: EntryFields, input: EntryInput, sent: EntryFields, index: number): EntryFields {
  const translations = { ...stored.translations, ...sent.translations };
  if (Object.keys(translations).length > MAX_TRANSLATIONS) {
    throw problems.badRequest(
      `"${stored.term}" would hold ${Object.keys(translations).length} translations; an entry holds at most ${MAX_TRANSLATIONS}.`,
      `/body/entries/${index}/translations`,
    );
  }
  return {
    // The term names the entry here, in whichever Unicode form the request wrote it; it stays as stored.
    term: stored.term,
    definition: input.definition === undefined ? stored.definition : sent.definition,
    caseSensitive: input.caseSensitive ?? stored.caseSensitive,
    doNotTranslate: input.doNotTranslate ?? stored.doNotTranslate,
    forbidden: input.forbidden ?? stored.forbidden,
    translations,
  };
}

async function entryCounts(op: OperationContext, versionIds: string[]) {
  if (versionIds.length === 0) return new Map<string, number>();
  const rows = await op.sql<{ id: string; n: number }[]>(
    `select glossary_version_id as id, count(*)::int as n from glossary_entries
      where glossary_version_id in (${versionIds.map(() => '?').join(', ')}) group by 1`,
    versionIds,
  );
  return new Map(rows.map((row) => [row.id, row.n]));
}

// Settings are one row edited in place. Organizations get theirs at creation; a personal account has
// none until its first update, and reads as the defaults at revision 0 meanwhile (a read never writes).
const SETTINGS = 'glossary settings';
const DEFAULT_SETTINGS = { enforcementMode: 'warn' as const, revision: 0 };

function serializeSettings(
  accountId: string,
  settings: IGlossarySettings | null,
  updatedBy: string | null,
): Schemas.GlossarySettings {
  const revision = settings?.revision ?? DEFAULT_SETTINGS.revision;
  return {
    enforcementMode: settings?.enforcementMode ?? DEFAULT_SETTINGS.enforcementMode,
    revision,
    etag: revisionEtag(accountId, revision),
    updatedAt: settings ? settings.updatedAt.toISOString() : null,
    updatedBy,
  };
}

async function settingsResponse(op: OperationContext, settings: IGlossarySettings | null) {
  const updatedById = settings?.updatedBy?.id;
  const updatedBy = updatedById ? ((await userHandles(op.em, [updatedById])).get(updatedById) ?? null) : null;
  const body = serializeSettings(op.target!.accountId, settings, updatedBy);
  return { body, headers: { ETag: body.etag } };
}

/**
 * Writes `entries` as the next glossary version, after the If-Match check against the current one. The
 * whole save and the edits by term all go through here, so they share one concurrency rule: a stale
 * If-Match is 412, and of two writes that race for the same version number one loses (412 or 409).
 */
type GlossaryWrite = 'saveGlossary' | 'upsertGlossaryEntries' | 'removeGlossaryEntries';

async function writeVersion(op: OperationContext<GlossaryWrite>, version: number, entries: EntryFields[]) {
  const row = op.em.create(GlossaryVersion, {
    account: op.target!.account,
    version,
    changeNote: op.body.changeNote ?? '',
    author: op.caller.userId,
  });
  await flushNewVersion(op, GLOSSARY);
  await insertEntries(op, row.id, entries);
  return row;
}

// Entries are read and written as plain rows, in one statement each way: a glossary has up to 5,000 of
// them, and making (or hydrating) an entity per entry cost ten times the SQL itself.
const ENTRY_COLUMNS = `e.term, e.definition, e.case_sensitive as "caseSensitive",
  e.do_not_translate as "doNotTranslate", e.forbidden, e.translations`;

/** A version's entries, in their order. */
function entriesOf(op: OperationContext, versionId: string): Promise<EntryFields[]> {
  return op.sql<EntryFields[]>(
    `select ${ENTRY_COLUMNS} from glossary_entries e where e.glossary_version_id = ? order by e.position`,
    [versionId],
  );
}

/**
 * A version's entries as JSON text. A version is never changed once written, so each process reads and
 * serialises one at most once while it stays in the cache; the version row read before this (for the
 * caller's account) is what makes an id reachable.
 */
async function entriesJsonOf(op: OperationContext, versionId: string): Promise<JsonArrayText> {
  const cached = op.service.glossaryEntries.get(versionId);
  op.service.metrics.glossaryCacheRead(cached ? 'hit' : 'miss');
  if (cached) return cached;
  const entries = await entriesOf(op, versionId);
  const json = { text: JSON.stringify(entries.map(serializeEntry)), length: entries.length };
  op.service.glossaryEntries.set(versionId, json);
  return json;
}

/** Writes a new version's entries in one statement, in the operation's transaction. */
async function insertEntries(op: OperationContext, versionId: string, entries: EntryFields[]): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map((entry, position) => ({ id: uuidv7(), position, ...entry }));
  await op.sql(
    `insert into glossary_entries
       (id, glossary_version_id, position, term, definition, case_sensitive, do_not_translate, forbidden, translations)
     select r.id, ?, r.position, r.term, r.definition, r."caseSensitive", r."doNotTranslate", r.forbidden,
            r.translations
       from jsonb_to_recordset(?::jsonb) as r(id uuid, position integer, term text, definition text,
            "caseSensitive" boolean, "doNotTranslate" boolean, forbidden boolean, translations jsonb)`,
    [versionId, JSON.stringify(rows)],
    'run',
  );
}

/**
 * The current version's entries in order (none before the first save), and the next version's number.
 * `alreadyApplied`: whether the edit would leave these entries as they are (nextVersion).
 */
async function currentEntries(
  op: OperationContext,
  alreadyApplied?: (entries: EntryFields[]) => boolean,
): Promise<{ version: number; entries: EntryFields[] }> {
  // The entries the check read, when it ran, are the current version's: read once. The check gets a copy,
  // since an upsert works on its entries in place.
  let read: EntryFields[] | undefined;
  const version = await nextVersion(
    op,
    GLOSSARY,
    alreadyApplied &&
      (async (current) => {
        read = await entriesAt(op, current);
        return alreadyApplied([...read]);
      }),
  );
  return { version, entries: version === 1 ? [] : (read ?? (await entriesAt(op, version - 1))) };
}

/** The entries of the account's version `version`, in order. */
function entriesAt(op: OperationContext, version: number): Promise<EntryFields[]> {
  return op.sql<EntryFields[]>(
    `select ${ENTRY_COLUMNS}
       from glossary_entries e join glossary_versions v on v.id = e.glossary_version_id
      where v.account_id = ? and v.version = ? order by e.position`,
    [op.target!.accountId, version],
  );
}

/**
 * The entries after an upsert of `changes` (as validated from the request's `inputs`), with the terms it
 * adds and the terms it changes; `entries` is updated in place.
 */
function upsertInto(
  entries: EntryFields[],
  changes: EntryFields[],
  inputs: EntryInput[],
  merge: boolean,
): { added: string[]; updated: string[] } {
  const at = new Map(entries.map((entry, index) => [termKey(entry.term), index]));
  const added: string[] = [];
  const updated: string[] = [];
  for (const [i, entry] of changes.entries()) {
    const index = at.get(termKey(entry.term));
    if (index === undefined) {
      added.push(entry.term);
      entries.push(entry);
    } else {
      const edited = merge ? mergedEntry(entries[index]!, inputs[i]!, entry, i) : entry;
      if (!sameEntry(entries[index], edited)) updated.push(edited.term);
      entries[index] = edited;
    }
  }
  if (entries.length > MAX_ENTRIES) {
    throw problems.badRequest(
      `The glossary would hold ${entries.length} entries; a glossary holds at most ${MAX_ENTRIES}.`,
      '/body/entries',
    );
  }
  return { added, updated };
}

async function editResponse<S extends 200 | 201>(
  status: S,
  op: OperationContext,
  row: IGlossaryVersion,
  entryCount: number,
  changes: { added?: string[]; updated?: string[]; removed?: string[] },
): Promise<{ status: S; body: Schemas.GlossaryEdit; headers: Record<string, string> }> {
  const account = op.target!.account;
  return {
    status,
    body: {
      version: row.version,
      etag: versionEtag(account.id, row.version),
      changeNote: row.changeNote,
      author: await authorHandle(op.em, row),
      createdAt: row.createdAt.toISOString(),
      entryCount,
      added: changes.added ?? [],
      updated: changes.updated ?? [],
      removed: changes.removed ?? [],
    },
    headers: {
      ETag: versionEtag(account.id, row.version),
      Location: `/api/v1/accounts/${account.handle}/glossary?version=${row.version}`,
    },
  };
}

const isTrue = (value: unknown) => value === true || value === 'true';
const isGiven = (value: unknown) => value !== undefined && value !== null;

/** A search cursor pins the version the first page read and the last position served. */
/**
 * A search cursor names the version it pins and the position after which the next page starts, and is
 * bound to the search that handed it out: the account and the filters (a short hash of them). Used on
 * another account's glossary or with other filters it is refused, instead of paging silently through a
 * search nobody asked for.
 */
function searchCursor(version: number, position: number, search: string) {
  return encodeCursor(`${version}.${position}.${search}`);
}

// Numbers as searchCursor writes them: a version from 1, a position from 0, no leading zeros (a cursor at
// version 0 would read the current version instead of a pinned one), and the search's hash.
const SEARCH_CURSOR = /^([1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.([A-Za-z0-9_-]{11})$/;

function readSearchCursor(
  cursor: string | undefined,
  search: string,
): { version: number; after: number } | undefined {
  if (!cursor) return undefined;
  const [, version, after, bound] = SEARCH_CURSOR.exec(
    decodeCursor(cursor, (text) => SEARCH_CURSOR.test(text)),
  )!;
  if (bound !== search) {
    throw problems.badRequest(
      'The cursor belongs to another search (another account, or other filters); send the filters it was handed out with, or start again without it.',
      '/query/cursor',
    );
  }
  return { version: Number(version), after: Number(after) };
}

/**
 * The search a cursor is bound to: the account and every filter given, each in one form whichever door
 * sent it (`doNotTranslate=true` over REST, `true` over MCP). A cursor pins the version itself.
 */
function searchOf(op: { target?: { accountId: string }; query: Record<string, unknown> }): string {
  const { termPrefix, locale, doNotTranslate, forbidden, version } = op.query;
  const given = <T>(value: unknown, form: (value: unknown) => T) => (isGiven(value) ? form(value) : null);
  const filters = JSON.stringify([
    op.target!.accountId,
    given(termPrefix, String),
    given(locale, (value) => canonicalLocale(String(value), '/query/locale')),
    given(doNotTranslate, isTrue),
    given(forbidden, isTrue),
    given(version, Number),
  ]);
  return createHash('sha256').update(filters).digest('base64url').slice(0, 11);
}

export const glossaryHandlers = {
  async getGlossary(op) {
    // A client polling for changes to a 5,000-entry glossary costs one small query while it has not changed.
    const unchanged = await unchangedSince(op, GLOSSARY);
    if (unchanged) return unchanged;
    const row = await findVersionSummary(op, GLOSSARY);
    const entries = await entriesJsonOf(op, row.id);
    return {
      status: 200,
      body: withJsonField<Schemas.Glossary>(
        glossaryHead(op.target!.accountId, row, row.author),
        'entries',
        entries,
      ),
      headers: { ETag: versionEtag(op.target!.accountId, row.version) },
    };
  },

  async saveGlossary(op) {
    const account = op.target!.account;
    const entries = validEntries(op.body.entries);
    const version = await nextVersion(op, GLOSSARY);
    const row = await writeVersion(op, version, entries);
    op.audit('glossary.save', 'glossary_version', row.id, { version, entryCount: entries.length });
    return {
      status: 201,
      body: serializeGlossary(account.id, row, entries, await authorHandle(op.em, row)),
      headers: {
        ETag: versionEtag(account.id, version),
        Location: `/api/v1/accounts/${account.handle}/glossary?version=${version}`,
      },
    };
  },

  async upsertGlossaryEntries(op) {
    const changes = validEntries(op.body.entries);
    const upsert = (entries: EntryFields[]) =>
      upsertInto(entries, changes, op.body.entries, op.body.merge === true);
    // A stale If-Match passes only for an upsert that changes nothing, one that is valid on those entries.
    const { version, entries } = await currentEntries(op, (stored) => {
      try {
        const { added, updated } = upsert(stored);
        return added.length === 0 && updated.length === 0;
      } catch {
        return false;
      }
    });
    const { added, updated } = upsert(entries);
    if (added.length === 0 && updated.length === 0) {
      // Every entry sent is as stored (an agent's retry, a merge of what is there): no version equal to the
      // last one, which would only push the real history down. The answer is the current version (200).
      const current = await op.em.findOneOrFail(GlossaryVersion, {
        account: op.target!.accountId,
        version: version - 1,
      });
      return editResponse(200, op, current, entries.length, {});
    }
    const row = await writeVersion(op, version, entries);
    op.audit('glossary.upsert', 'glossary_version', row.id, { version, added, updated });
    return editResponse(201, op, row, entries.length, { added, updated });
  },

  async removeGlossaryEntries(op) {
    const terms: string[] = op.body.terms;
    const { version, entries } = await currentEntries(op);
    const present = new Set(entries.map((entry) => termKey(entry.term)));
    const missing = terms.findIndex((term) => !present.has(termKey(term)));
    if (missing >= 0) {
      throw problems.badRequest(
        `The term "${terms[missing]}" is not in the current glossary; nothing was removed.`,
        `/body/terms/${missing}`,
      );
    }
    const removing = new Set(terms.map(termKey));
    const kept = entries.filter((entry) => !removing.has(termKey(entry.term)));
    // The terms as the glossary held them, each once, however the request named them (`café` twice, in
    // its composed and decomposed forms, removes one entry).
    const removed = entries.filter((entry) => removing.has(termKey(entry.term))).map((entry) => entry.term);
    const row = await writeVersion(op, version, kept);
    op.audit('glossary.remove', 'glossary_version', row.id, { version, removed });
    return editResponse(201, op, row, kept.length, { removed });
  },

  async searchGlossaryEntries(op) {
    const search = searchOf(op);
    const cursor = readSearchCursor(op.query.cursor, search);
    const limit: number = op.query.limit ?? 20;
    const requested = cursor?.version ?? (isGiven(op.query.version) ? Number(op.query.version) : undefined);
    const row = await findVersionSummary(op, GLOSSARY, requested);
    const where = ['glossary_version_id = ?', 'position > ?'];
    const params: unknown[] = [row.id, cursor?.after ?? -1];
    if (isGiven(op.query.termPrefix)) {
      // A prefix match on lower(term); LIKE's own wildcards in the prefix are matched literally. PostgreSQL
      // lowers the prefix too: JavaScript's toLowerCase differs from lower() (a final Σ becomes ς, İ
      // becomes i̇), and a prefix lowered one way misses a term lowered the other, even the term itself.
      // Both in NFC, as terms are compared everywhere else: `café` finds a term stored with e + U+0301.
      where.push(`normalize(lower(term), NFC) like normalize(lower(?), NFC) escape '\\'`);
      params.push(`${String(op.query.termPrefix).replace(/[\\%_]/g, '\\$&')}%`);
    }
    if (isGiven(op.query.locale)) {
      where.push('(translations ->> ?) is not null');
      params.push(canonicalLocale(String(op.query.locale), '/query/locale'));
    }
    if (isGiven(op.query.doNotTranslate)) {
      where.push('do_not_translate = ?');
      params.push(isTrue(op.query.doNotTranslate));
    }
    if (isGiven(op.query.forbidden)) {
      where.push('forbidden = ?');
      params.push(isTrue(op.query.forbidden));
    }
    params.push(limit + 1);
    const rows = await op.sql<(EntryFields & { position: number })[]>(
      `select position, term, definition, case_sensitive as "caseSensitive",
              do_not_translate as "doNotTranslate", forbidden, translations
         from glossary_entries where ${where.join(' and ')} order by position limit ?`,
      params,
    );
    const items = rows.slice(0, limit);
    const more = rows.length > limit;
    return {
      status: 200,
      body: {
        version: row.version,
        etag: versionEtag(op.target!.accountId, row.version),
        items: items.map(serializeEntry),
        nextCursor: more ? searchCursor(row.version, items.at(-1)!.position, search) : null,
      },
      headers: { ETag: versionEtag(op.target!.accountId, row.version) },
    };
  },

  async listGlossaryVersions(op) {
    const { rows, request } = await versionHistory(op, GLOSSARY);
    const counts = await entryCounts(
      op,
      rows.slice(0, request.limit).map((row) => row.id),
    );
    return {
      status: 200,
      body: page(rows, request, (row) => ({
        ...versionSummary(row),
        entryCount: counts.get(row.id) ?? 0,
      })),
    };
  },

  async getGlossarySettings(op) {
    const settings = await op.em.findOne(GlossarySettings, { account: op.target!.accountId });
    const unchanged = notModified(
      op,
      revisionEtag(op.target!.accountId, settings?.revision ?? DEFAULT_SETTINGS.revision),
    );
    if (unchanged) return unchanged;
    return { status: 200, ...(await settingsResponse(op, settings)) };
  },

  async updateGlossarySettings(op) {
    const account = op.target!.account;
    const enforcementMode = op.body.enforcementMode;
    // Updates at the same moment take turns, as saves of a version history do: without If-Match each
    // applies on top of the last (five of six answered 409), with it the stale ones get 412.
    await takeTurn(op, 'glossary_settings');
    let settings = await op.em.findOne(GlossarySettings, { account: account.id });
    const current = revisionEtag(account.id, settings?.revision ?? DEFAULT_SETTINGS.revision);
    assertIfMatch(op, current, SETTINGS);
    // The settings always have a version (the defaults, before the first update): `*` never saves.
    assertIfNoneMatch(op, current, SETTINGS);
    if (!settings) {
      settings = op.em.create(GlossarySettings, {
        account,
        enforcementMode,
        revision: 1,
        updatedBy: op.caller.userId,
      });
      await flushUnlessRaced(op, 'glossary_settings_account_id_key', SETTINGS);
    } else {
      // Conditional on the revision read above: of two writers that read the same revision, one updates
      // a row and the other none, so both cannot win even when neither sent If-Match.
      const updated = await op.em.nativeUpdate(
        GlossarySettings,
        { id: settings.id, revision: settings.revision },
        {
          enforcementMode,
          revision: settings.revision + 1,
          updatedBy: op.caller.userId,
          updatedAt: new Date(),
        },
      );
      if (updated === 0) throw lostRace(op, SETTINGS);
      await op.em.refresh(settings);
    }
    op.audit('glossary_settings.update', 'glossary_settings', settings.id, {
      enforcementMode,
      revision: settings.revision,
    });
    return { status: 200, ...(await settingsResponse(op, settings)) };
  },
} satisfies Partial<Handlers>;
