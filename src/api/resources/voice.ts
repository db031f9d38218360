import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { type IVoiceVersion, VoiceVersion } from '../../db/entities/index.ts';
import { assertCountryCodes } from '../../domain/countries.ts';
import { canonicalLocaleKeys } from '../../domain/validation.ts';
import { versionEtag } from '../etag.ts';
import { page } from '../pagination.ts';
import type { Handlers } from '../pipeline.ts';
import {
  authorHandle,
  findVersionSummary,
  flushNewVersion,
  type History,
  nextVersion,
  unchangedSince,
  versionHistory,
  versionSummary,
} from '../versions.ts';

const VOICE: History<IVoiceVersion> = {
  entity: VoiceVersion,
  noun: 'voice',
  saveOperation: 'saveVoice',
  uniqueConstraint: 'voice_versions_account_version_unique',
  table: 'voice_versions',
  readColumns: `v.tone, v.formality, v.target_audience as "targetAudience", v.guidelines,
    v.target_countries as "targetCountries", v.cultural_notes as "culturalNotes",
    v.locale_overrides as "localeOverrides"`,
};

/** What a read of a voice version shows: the version's own fields (its author comes as a handle). */
type VoiceFields = Omit<IVoiceVersion, 'id' | 'account' | 'author'>;

interface VoiceOverride {
  targetCountries?: string[];
  [field: string]: unknown;
}

function serializeVoice(accountId: string, row: VoiceFields, author: string | null): Schemas.Voice {
  return {
    version: row.version,
    etag: versionEtag(accountId, row.version),
    tone: row.tone,
    formality: row.formality,
    targetAudience: row.targetAudience,
    guidelines: row.guidelines,
    targetCountries: row.targetCountries,
    culturalNotes: row.culturalNotes,
    localeOverrides: row.localeOverrides,
    changeNote: row.changeNote,
    author,
    createdAt: row.createdAt.toISOString(),
  };
}

/** Country codes checked everywhere they appear, then override keys in canonical BCP 47 form. */
function validOverrides(overrides: Record<string, VoiceOverride>): Record<string, VoiceOverride> {
  for (const [key, override] of Object.entries(overrides)) {
    if (override.targetCountries) {
      const pointer = `/body/localeOverrides/${key.replace(/~/g, '~0').replace(/\//g, '~1')}/targetCountries`;
      assertCountryCodes(override.targetCountries, pointer);
    }
  }
  return canonicalLocaleKeys(overrides, '/body/localeOverrides');
}

export const voiceHandlers = {
  async getVoice(op) {
    const unchanged = await unchangedSince(op, VOICE);
    if (unchanged) return unchanged;
    const row = await findVersionSummary<IVoiceVersion, VoiceFields>(op, VOICE);
    return {
      status: 200,
      body: serializeVoice(op.target!.accountId, row, row.author),
      headers: { ETag: versionEtag(op.target!.accountId, row.version) },
    };
  },

  async saveVoice(op) {
    const account = op.target!.account;
    const body = op.body;
    const targetCountries: string[] = body.targetCountries ?? [];
    assertCountryCodes(targetCountries, '/body/targetCountries');
    const localeOverrides = validOverrides(body.localeOverrides ?? {});
    const version = await nextVersion(op, VOICE);
    // The body is the whole voice: what it leaves out is empty in the new version, not carried over.
    const row = op.em.create(VoiceVersion, {
      account,
      version,
      tone: body.tone ?? '',
      formality: body.formality ?? 'neutral',
      targetAudience: body.targetAudience ?? '',
      guidelines: body.guidelines ?? '',
      targetCountries,
      culturalNotes: body.culturalNotes ?? '',
      localeOverrides,
      changeNote: body.changeNote ?? '',
      author: op.caller.userId,
    });
    op.audit('voice.save', 'voice_version', row.id, { version });
    await flushNewVersion(op, VOICE);
    return {
      status: 201,
      body: serializeVoice(account.id, row, await authorHandle(op.em, row)),
      headers: {
        ETag: versionEtag(account.id, version),
        Location: `/api/v1/accounts/${account.handle}/voice?version=${version}`,
      },
    };
  },

  async listVoiceVersions(op) {
    const { rows, request } = await versionHistory(op, VOICE);
    return { status: 200, body: page(rows, request, versionSummary) };
  },
} satisfies Partial<Handlers>;
