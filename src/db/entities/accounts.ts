import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, updatedAtColumn } from './common.ts';
import { User } from './identity.ts';

const ACCOUNT_KINDS = ['user', 'organization'] as const;
const VISIBILITIES = ['private', 'public'] as const;
const ORG_ROLES = ['admin', 'member'] as const;
const INVITATION_STATUSES = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** The owner of projects, voice, glossary, models and tokens: a user's personal account or an organization's. */
export const Account = defineEntity({
  name: 'Account',
  tableName: 'accounts',
  properties: {
    id: idColumn(),
    kind: p.enum(ACCOUNT_KINDS),
    handle: p.string(),
    displayName: p.string(),
    visibility: p.enum(VISIBILITIES).default('private'),
    /** Set for personal accounts only. */
    user: () => p.oneToOne(User).nullable().deleteRule('cascade'),
    /** Moved by the database on every update of the handle, name or visibility: the ETag's revision. */
    revision: p.integer().default(1),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IAccount = InferEntity<typeof Account>;

export const Organization = defineEntity({
  name: 'Organization',
  tableName: 'organizations',
  properties: {
    id: idColumn(),
    account: () => p.oneToOne(Account).deleteRule('cascade'),
    createdBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IOrganization = InferEntity<typeof Organization>;

export const Membership = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  properties: {
    id: idColumn(),
    organization: () => p.manyToOne(Organization).deleteRule('cascade'),
    user: () => p.manyToOne(User).deleteRule('cascade'),
    role: p.enum(ORG_ROLES),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export const Invitation = defineEntity({
  name: 'Invitation',
  tableName: 'invitations',
  properties: {
    id: idColumn(),
    organization: () => p.manyToOne(Organization).deleteRule('cascade'),
    email: p.string(),
    role: p.enum(ORG_ROLES),
    /** SHA-256 of the single-use token sent to the invitee; the token itself is never stored. */
    tokenHash: p.blob().hidden(),
    status: p.enum(INVITATION_STATUSES).default('pending'),
    expiresAt: p.datetime(),
    invitedBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    respondedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
export type IInvitation = InferEntity<typeof Invitation>;

/** A work e-mail domain an organization claims; automatic enrollment needs it verified. */
export const OrganizationDomain = defineEntity({
  name: 'OrganizationDomain',
  tableName: 'organization_domains',
  properties: {
    id: idColumn(),
    organization: () => p.manyToOne(Organization).deleteRule('cascade'),
    domain: p.string(),
    verificationTokenHash: p.blob().hidden(),
    verifiedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export type IOrganizationDomain = InferEntity<typeof OrganizationDomain>;

/** The organization's own identity provider (workspace or enterprise OIDC). */
export const OrganizationSignInProvider = defineEntity({
  name: 'OrganizationSignInProvider',
  tableName: 'organization_sign_in_providers',
  properties: {
    id: idColumn(),
    organization: () => p.oneToOne(Organization).deleteRule('cascade'),
    kind: p.enum(['oidc'] as const),
    issuer: p.string(),
    clientId: p.string(),
    clientSecretEncrypted: p.blob().nullable().hidden(),
    enabled: p.boolean().default(false),
    /** Role given to people enrolled automatically; null: nobody is enrolled. */
    enrollRole: p.enum(ORG_ROLES).nullable(),
    /** People at the organization's verified domains must sign in through this provider. */
    required: p.boolean().default(false),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});
