import {
  GlossaryEntry,
  GlossarySettings,
  GlossaryVersion,
  type IGlossaryEntry,
  type IGlossarySettings,
  type IGlossaryVersion,
} from '../../db/entities/index.ts';
import { userHandles } from '../../domain/users.ts';
import { canonicalLocaleKeys } from '../../domain/validation.ts';
import { assertIfMatch, flushUnlessRaced, lostRace, revisionEtag, versionEtag } from '../etag.ts';
import { page } from '../pagination.ts';
import type { OperationHandler } from '../pipeline.ts';
import { problems } from '../problem.ts';
import {
  authorHandle,
  findVersion,
  flushNewVersion,
  type History,
  nextVersion,
  versionHistory,
  versionSummary,
} from '../versions.ts';

const GLOSSARY: History<IGlossaryVersion> = {
  entity: GlossaryVersion,
  noun: 'glossary',
  saveOperation: 'saveGlossary',
  uniqueConstraint: 'glossary_versions_account_version_unique',
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

function serializeEntry(entry: EntryFields) {
  return {
    term: entry.term,
    definition: entry.definition,
    caseSensitive: entry.caseSensitive,
    doNotTranslate: entry.doNotTranslate,
    forbidden: entry.forbidden,
    translations: entry.translations,
  };
}

function serializeGlossary(row: IGlossaryVersion, entries: EntryFields[], author: string | null) {
  return {
    version: row.version,
    etag: versionEtag(row.version),
    changeNote: row.changeNote,
    author,
    createdAt: row.createdAt.toISOString(),
    entries: entries.map(serializeEntry),
  };
}

/** Entries in stored form; a term listed twice is reported at its second occurrence. */
function validEntries(entries: EntryInput[]): EntryFields[] {
  const firstIndex = new Map<string, number>();
  return entries.map((entry, i) => {
    const earlier = firstIndex.get(entry.term);
    if (earlier !== undefined) {
      throw problems.badRequest(
        `The term "${entry.term}" is already entry ${earlier}; a glossary lists each term once.`,
        `/body/entries/${i}/term`,
      );
    }
    firstIndex.set(entry.term, i);
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

async function entryCounts(op: Parameters<OperationHandler>[0], versionIds: string[]) {
  if (versionIds.length === 0) return new Map<string, number>();
  const rows = await op.em.getConnection().execute<{ id: string; n: number }[]>(
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

function serializeSettings(settings: IGlossarySettings | null, updatedBy: string | null) {
  const revision = settings?.revision ?? DEFAULT_SETTINGS.revision;
  return {
    enforcementMode: settings?.enforcementMode ?? DEFAULT_SETTINGS.enforcementMode,
    revision,
    etag: revisionEtag(revision),
    updatedAt: settings ? settings.updatedAt.toISOString() : null,
    updatedBy,
  };
}

async function settingsResponse(op: Parameters<OperationHandler>[0], settings: IGlossarySettings | null) {
  const updatedById = settings?.updatedBy?.id;
  const updatedBy = updatedById ? ((await userHandles(op.em, [updatedById])).get(updatedById) ?? null) : null;
  const body = serializeSettings(settings, updatedBy);
  return { body, headers: { ETag: body.etag } };
}

export const glossaryHandlers: Record<string, OperationHandler> = {
  async getGlossary(op) {
    const row = await findVersion(op, GLOSSARY, ['entries']);
    return {
      status: 200,
      body: serializeGlossary(row, row.entries.getItems(), await authorHandle(op.em, row)),
      headers: { ETag: versionEtag(row.version) },
    };
  },

  async saveGlossary(op) {
    const account = op.target!.account;
    const entries = validEntries(op.body.entries);
    const version = await nextVersion(op, GLOSSARY);
    const row = op.em.create(GlossaryVersion, {
      account,
      version,
      changeNote: op.body.changeNote ?? '',
      author: op.caller.userId,
    });
    entries.forEach((entry, position) => {
      op.em.create(GlossaryEntry, { ...entry, glossaryVersion: row, position });
    });
    op.audit('glossary.save', 'glossary_version', row.id, { version, entryCount: entries.length });
    await flushNewVersion(op, GLOSSARY);
    return {
      status: 201,
      body: serializeGlossary(row, entries, await authorHandle(op.em, row)),
      headers: {
        ETag: versionEtag(version),
        Location: `/api/v1/accounts/${account.handle}/glossary?version=${version}`,
      },
    };
  },

  async listGlossaryVersions(op) {
    const { rows, request, authors } = await versionHistory(op, GLOSSARY);
    const counts = await entryCounts(
      op,
      rows.slice(0, request.limit).map((row) => row.id),
    );
    return {
      status: 200,
      body: page(rows, request, (row) => ({
        ...versionSummary(row, authors),
        entryCount: counts.get(row.id) ?? 0,
      })),
    };
  },

  async getGlossarySettings(op) {
    const settings = await op.em.findOne(GlossarySettings, { account: op.target!.account.id });
    return { status: 200, ...(await settingsResponse(op, settings)) };
  },

  async updateGlossarySettings(op) {
    const account = op.target!.account;
    const enforcementMode = op.body.enforcementMode;
    let settings = await op.em.findOne(GlossarySettings, { account: account.id });
    assertIfMatch(op, revisionEtag(settings?.revision ?? DEFAULT_SETTINGS.revision), SETTINGS);
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
};
