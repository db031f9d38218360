import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { Account } from './accounts.ts';
import { createdAtColumn, idColumn, updatedAtColumn } from './common.ts';
import { User } from './identity.ts';

const FORMALITIES = ['informal', 'neutral', 'formal'] as const;
const ENFORCEMENT_MODES = ['off', 'warn', 'strict'] as const;

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  properties: {
    id: idColumn(),
    account: () => p.manyToOne(Account).deleteRule('cascade'),
    handle: p.string(),
    name: p.string(),
    description: p.text().default(''),
    sourceLocale: p.string(),
    targetLocales: p.array().columnType('text[]').default([]),
    /** Moved by the database on every update that changes what the API shows: the ETag's revision. */
    revision: p.integer().default(1),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IProject = InferEntity<typeof Project>;

/** One saved state of an account's voice. Saving makes a new row; rows are never updated. */
export const VoiceVersion = defineEntity({
  name: 'VoiceVersion',
  tableName: 'voice_versions',
  properties: {
    id: idColumn(),
    account: () => p.manyToOne(Account).deleteRule('cascade'),
    version: p.integer(),
    tone: p.text().default(''),
    formality: p.enum(FORMALITIES).default('neutral'),
    targetAudience: p.text().default(''),
    guidelines: p.text().default(''),
    targetCountries: p.array().columnType('text[]').default([]),
    culturalNotes: p.text().default(''),
    localeOverrides: p.json<Record<string, Record<string, unknown>>>().onCreate(() => ({})),
    changeNote: p.text().default(''),
    author: () => p.manyToOne(User).nullable().deleteRule('set null'),
    createdAt: createdAtColumn(),
  },
});
export type IVoiceVersion = InferEntity<typeof VoiceVersion>;

export const GlossaryVersion = defineEntity({
  name: 'GlossaryVersion',
  tableName: 'glossary_versions',
  properties: {
    id: idColumn(),
    account: () => p.manyToOne(Account).deleteRule('cascade'),
    version: p.integer(),
    changeNote: p.text().default(''),
    author: () => p.manyToOne(User).nullable().deleteRule('set null'),
    entries: () => p.oneToMany(GlossaryEntry).mappedBy('glossaryVersion').orderBy({ position: 'asc' }),
    createdAt: createdAtColumn(),
  },
});
export type IGlossaryVersion = InferEntity<typeof GlossaryVersion>;

export const GlossaryEntry = defineEntity({
  name: 'GlossaryEntry',
  tableName: 'glossary_entries',
  properties: {
    id: idColumn(),
    glossaryVersion: () => p.manyToOne(GlossaryVersion).deleteRule('cascade'),
    position: p.integer(),
    term: p.string(),
    definition: p.text().default(''),
    caseSensitive: p.boolean().default(false),
    doNotTranslate: p.boolean().default(false),
    forbidden: p.boolean().default(false),
    translations: p.json<Record<string, string>>().onCreate(() => ({})),
  },
});
export type IGlossaryEntry = InferEntity<typeof GlossaryEntry>;

/** Edited in place (not versioned); `revision` is the optimistic-concurrency counter behind its ETag. */
export const GlossarySettings = defineEntity({
  name: 'GlossarySettings',
  tableName: 'glossary_settings',
  properties: {
    id: idColumn(),
    account: () => p.oneToOne(Account).deleteRule('cascade'),
    enforcementMode: p.enum(ENFORCEMENT_MODES).default('warn'),
    revision: p.integer().default(1),
    updatedBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IGlossarySettings = InferEntity<typeof GlossarySettings>;

export const AccountModel = defineEntity({
  name: 'AccountModel',
  tableName: 'account_models',
  properties: {
    id: idColumn(),
    account: () => p.manyToOne(Account).deleteRule('cascade'),
    handle: p.string(),
    /** `provider:model`, for example `openai:gpt-4o`. */
    model: p.string(),
    baseUrl: p.string().nullable(),
    /** AES-256-GCM ciphertext (see lib/field-encryption.ts); never serialized. */
    apiKeyEncrypted: p.blob().nullable().hidden(),
    apiKeyLast4: p.string().nullable(),
    isDefault: p.boolean().default(false),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IAccountModel = InferEntity<typeof AccountModel>;

export const AccountToken = defineEntity({
  name: 'AccountToken',
  tableName: 'account_tokens',
  properties: {
    id: idColumn(),
    account: () => p.manyToOne(Account).deleteRule('cascade'),
    createdBy: () => p.manyToOne(User).deleteRule('cascade'),
    name: p.string(),
    description: p.text().default(''),
    scopes: p.array().columnType('text[]'),
    /** The visible start of the token, so a user can tell tokens apart; not a secret. */
    tokenPrefix: p.string(),
    /** SHA-256 of the whole token; the token itself is shown once and never stored. */
    tokenHash: p.blob().hidden(),
    expiresAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    /** Set when an OAuth app created the token: it works only while that grant (the app's consent) lives. */
    oauthGrantId: p.string().columnType('text').nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IAccountToken = InferEntity<typeof AccountToken>;

export const AuditEvent = defineEntity({
  name: 'AuditEvent',
  tableName: 'audit_events',
  properties: {
    id: idColumn(),
    occurredAt: createdAtColumn(),
    actorUser: () => p.manyToOne(User).nullable().deleteRule('set null'),
    actorTokenId: p.uuid().nullable(),
    actorClientId: p.string().nullable(),
    account: () => p.manyToOne(Account).nullable().deleteRule('set null'),
    action: p.string(),
    resourceType: p.string(),
    resourceId: p.string().nullable(),
    ip: p.string().nullable(),
    userAgent: p.string().nullable(),
    details: p.json<Record<string, unknown>>().onCreate(() => ({})),
  },
});

/** Storage for oidc-provider models; see src/oauth/adapter.ts. */
export const OidcModel = defineEntity({
  name: 'OidcModel',
  tableName: 'oidc_models',
  properties: {
    model: p.string().primary(),
    id: p.string().primary(),
    payload: p.json<Record<string, unknown>>(),
    grantId: p.string().nullable(),
    userCode: p.string().nullable(),
    uid: p.string().nullable(),
    expiresAt: p.datetime().nullable(),
    consumedAt: p.datetime().nullable(),
    /** A rotated refresh token's successor, encrypted (src/oauth/refresh-grace.ts). */
    successorEncrypted: p.string().nullable(),
    createdAt: createdAtColumn(),
  },
});
