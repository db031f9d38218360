// From a provider's profile to a user of ours. The same provider subject always finds the same user; a
// second provider is linked only from a signed-in session, never because the e-mails match; an
// organization's provider enrolls people at its verified domains; an organization can require its
// provider for its domains.

import { randomBytes } from 'node:crypto';
import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  Identity,
  Membership,
  Organization,
  OrganizationDomain,
  OrganizationSignInProvider,
  User,
} from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { type AuditRecord, recordAudit } from '../domain/audit.ts';
import { createUserWithAccount, personalAccount } from '../domain/users.ts';
import { asciiDomain, asciiEmail } from './domains.ts';
import type { Profile } from './providers.ts';

export type SignInOutcome = { userId: string; created: boolean } | { refused: string };

const HANDLE = /^[a-z][a-z0-9-]{0,37}[a-z0-9]$/;

/** `org:<id>` names an organization's own provider. */
export const orgProviderKey = (organizationId: string) => `org:${organizationId}`;

/** The organization whose own provider `provider` names (orgProviderKey), or undefined for any other. */
export const organizationOfProvider = (provider: string): string | undefined =>
  provider.startsWith('org:') ? provider.slice('org:'.length) : undefined;

/** Associated data of an organization's encrypted provider secret: it decrypts only for its organization. */
export const orgSecretBinding = (organizationId: string) => `org-idp-secret:${organizationId}`;

/**
 * Removes the identities an organization's own provider issued; returns how many there were. They end with
 * the provider (removed, or set to another issuer, whose subjects could name other people) and with the
 * organization: nothing else removes them, since the provider key is no foreign key, and an identity left
 * behind would keep its e-mail verified (opening another organization's invitations) and count as a way to
 * sign in that no longer works.
 */
export function endOrganizationIdentities(em: EntityManager, organizationId: string): Promise<number> {
  return em.nativeDelete(Identity, { provider: orgProviderKey(organizationId) });
}

export function domainOf(email: string): string {
  // Domains are verified in their ASCII (punycode) form: an address a provider or a person writes in
  // Unicode (bücher.example) names the same domain as xn--bcher-kva.example.
  return asciiDomain(email.slice(email.lastIndexOf('@') + 1));
}

/**
 * The e-mails a provider vouched for when this user signed in (asciiEmail: lowercase, the domain in
 * punycode): the only ones we trust. Stored ones are in that form already, but an instance of a release
 * before it may still write a Unicode domain during a rolling upgrade, after the migration that rewrote them.
 */
export async function verifiedEmails(em: EntityManager, userId: string): Promise<Set<string>> {
  const rows = await em.find(Identity, { user: userId, emailVerified: true, email: { $ne: null } });
  return new Set(rows.map((r) => asciiEmail(r.email!)));
}

/** A handle made from the provider's username: lowercase letters, digits and hyphens, starting with a letter. */
function proposeHandle(username: string | undefined): string {
  let base = (username ?? '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^[^a-z]+/, '')
    .slice(0, 30)
    .replace(/-+$/, '');
  if (base.length < 2) base = `user${base}`;
  return base;
}

/**
 * Finds or creates the user for a profile. With `linkTo` (a signed-in user adding a way to sign in) the
 * identity joins that user, or is refused if it belongs to someone else; a new one is audited
 * (`identity.link`, on their personal account, as its removal is) with the request's `meta`.
 */
export async function signInWithProfile(
  orm: Orm,
  given: Profile,
  options: { linkTo?: string; meta?: AuditRecord['meta']; raced?: boolean } = {},
): Promise<SignInOutcome> {
  const em = orm.em.fork();
  const profile = await withTrustedEmail(em, given);
  const existing = await em.findOne(Identity, { provider: profile.provider, subject: profile.subject });

  if (options.linkTo) {
    if (existing && existing.user.id !== options.linkTo)
      return { refused: 'This sign-in is already linked to another user of this service.' };
    if (!existing) {
      const identity = em.create(Identity, {
        user: options.linkTo,
        provider: profile.provider,
        subject: profile.subject,
        ...emailFields(profile),
      });
      recordAudit(
        em,
        { userId: options.linkTo },
        {
          action: 'identity.link',
          resourceType: 'identity',
          resourceId: identity.id,
          account: await personalAccount(em, options.linkTo),
          details: { provider: profile.provider },
          door: 'web',
          meta: options.meta ?? {},
        },
      );
    } else Object.assign(existing, emailFields(profile));
    await em.flush();
    await enroll(em, profile, options.linkTo, options.meta);
    return { userId: options.linkTo, created: false };
  }

  const required = await requiredElsewhere(em, profile, existing ?? undefined);
  if (required)
    return {
      refused: `People at ${required} sign in through their organization's provider: use “Sign in with your organization”.`,
    };

  if (existing) {
    Object.assign(existing, emailFields(profile));
    await em.flush();
    await enroll(em, profile, existing.user.id, options.meta);
    return { userId: existing.user.id, created: false };
  }

  let userId: string;
  try {
    userId = await createPerson(orm, profile);
  } catch (error) {
    // The same person's first sign-in finished in another browser at the same moment and created them:
    // this one signs in as them (it found no identity a moment ago, and finds it now). Once only.
    if (options.raced || !isSameIdentity(error)) throw error;
    return signInWithProfile(orm, given, { ...options, raced: true });
  }
  await enroll(orm.em.fork(), profile, userId, options.meta);
  return { userId, created: true };
}

const isSameIdentity = (error: unknown) =>
  error instanceof UniqueConstraintViolationException && /identities_provider_subject/.test(String(error));

/**
 * An organization's provider is run by that organization, which anyone can create: it vouches only for
 * e-mails at the domains that organization verified. Any other e-mail it calls verified is kept as unverified
 * (else it would open invitations sent to that address).
 */
async function withTrustedEmail(em: EntityManager, profile: Profile): Promise<Profile> {
  const organizationId = organizationOfProvider(profile.provider);
  if (!organizationId || !profile.verifiedEmail) return profile;
  const own = await em.findOne(OrganizationDomain, {
    organization: organizationId,
    domain: domainOf(profile.verifiedEmail),
    verifiedAt: { $ne: null },
  });
  if (own) return profile;
  return { ...profile, verifiedEmail: undefined, unverifiedEmail: profile.verifiedEmail };
}

function emailFields(profile: Profile) {
  return {
    email: profile.verifiedEmail ?? profile.unverifiedEmail ?? null,
    emailVerified: Boolean(profile.verifiedEmail),
  };
}

/** A new user, their personal account (handle from the username, made unique) and the identity. */
async function createPerson(orm: Orm, profile: Profile): Promise<string> {
  const base = proposeHandle(profile.username);
  for (let attempt = 0; ; attempt++) {
    const handle = attempt === 0 ? base : `${base.slice(0, 30)}-${randomBytes(3).toString('hex')}`;
    if (!HANDLE.test(handle)) continue;
    const em = orm.em.fork();
    const { user } = createUserWithAccount(em, {
      handle,
      // At most 100 characters, cut between two (slice's UTF-16 units split an emoji into U+FFFD); a
      // name that is only spaces is no name.
      displayName: [...(profile.name?.trim() || profile.username || handle)].slice(0, 100).join(''),
      email: profile.verifiedEmail ?? null,
    });
    em.create(Identity, {
      user,
      provider: profile.provider,
      subject: profile.subject,
      ...emailFields(profile),
    });
    try {
      await em.flush();
      return user.id;
    } catch (error) {
      // The handle is taken or reserved (the database decides): try a suffixed one. Anything else, or the
      // same identity created by a parallel callback, is not ours to retry.
      const taken =
        error instanceof UniqueConstraintViolationException && /accounts_handle/.test(String(error));
      const reserved = (error as { code?: string }).code === '23514';
      if (!(taken || reserved) || attempt >= 5) throw error;
    }
  }
}

/**
 * Enrollment: only through an organization's own provider, only with a verified e-mail at one of that
 * organization's verified domains, and only when the organization chose a role for enrolled people.
 */
async function enroll(
  em: EntityManager,
  profile: Profile,
  userId: string,
  meta: AuditRecord['meta'] = {},
): Promise<void> {
  const organizationId = organizationOfProvider(profile.provider);
  if (!organizationId || !profile.verifiedEmail) return;
  const provider = await em.findOne(OrganizationSignInProvider, { organization: organizationId });
  if (!provider?.enrollRole) return;
  const domain = await em.findOne(OrganizationDomain, {
    organization: organizationId,
    domain: domainOf(profile.verifiedEmail),
    verifiedAt: { $ne: null },
  });
  if (!domain) return;
  const member = await em.findOne(Membership, { organization: organizationId, user: userId });
  if (member) return;
  const membership = em.create(Membership, {
    organization: organizationId,
    user: userId,
    role: provider.enrollRole,
  });
  const user = await em.findOneOrFail(User, userId);
  user.email ??= profile.verifiedEmail;
  // The organization's admins read who joined, and how, in its log (in the same flush: a parallel
  // sign-in that enrolled them first leaves neither the membership nor the event).
  const organization = await em.findOneOrFail(Organization, organizationId, { populate: ['account'] });
  recordAudit(
    em,
    { userId },
    {
      action: 'member.enroll',
      resourceType: 'membership',
      resourceId: membership.id,
      account: organization.account,
      details: { role: provider.enrollRole, domain: domain.domain },
      door: 'web',
      meta,
    },
  );
  try {
    await em.flush();
  } catch (error) {
    if (!(error instanceof UniqueConstraintViolationException)) throw error; // a parallel sign-in enrolled them
  }
}

/**
 * The verified domain that makes this sign-in go through an organization's own provider, when it comes
 * from another provider: the profile's e-mail is at a domain whose organization requires its provider; or,
 * for someone who already has a user here (`existing`, this provider's identity of theirs), another of
 * their identities verified an e-mail at such a domain and they are a member of that organization (so a
 * personal provider they linked is no way around it; once they are no longer a member, it is theirs again).
 */
async function requiredElsewhere(
  em: EntityManager,
  profile: Profile,
  existing?: { id: string; user: { id: string } },
): Promise<string | undefined> {
  const email = profile.verifiedEmail ?? profile.unverifiedEmail;
  const own = email ? domainOf(email) : undefined;
  const others = existing
    ? await em.find(Identity, {
        user: existing.user.id,
        id: { $ne: existing.id },
        emailVerified: true,
        email: { $ne: null },
      })
    : [];
  const domains = new Set([...(own ? [own] : []), ...others.map((i) => domainOf(i.email!))]);
  if (domains.size === 0) return undefined;
  const rows = await em.find(OrganizationDomain, {
    domain: { $in: [...domains] },
    verifiedAt: { $ne: null },
  });
  for (const row of rows) {
    const organizationId = row.organization.id;
    if (profile.provider === orgProviderKey(organizationId)) continue;
    const provider = await em.findOne(OrganizationSignInProvider, {
      organization: organizationId,
      required: true,
      enabled: true,
    });
    if (!provider) continue;
    if (row.domain === own) return row.domain;
    if (await em.findOne(Membership, { organization: organizationId, user: existing!.user.id }))
      return row.domain;
  }
  return undefined;
}

/** Removes one of the user's identities, never the last one (their rows locked, so two removals cannot race). */
export async function unlinkIdentity(
  em: EntityManager,
  userId: string,
  identityId: string,
): Promise<'removed' | 'last' | 'not_found'> {
  // In the caller's transaction (the operation's, a savepoint inside it): the removal and its audit event
  // commit together, or neither does.
  return em.transactional(async (tx) => {
    const rows = await tx.find(Identity, { user: userId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!rows.some((r) => r.id === identityId)) return 'not_found';
    if (rows.length <= 1) return 'last';
    await tx.nativeDelete(Identity, { id: identityId, user: userId });
    return 'removed';
  });
}
