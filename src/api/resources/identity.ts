import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import {
  Identity,
  type IOrganizationDomain,
  Membership,
  Organization,
  OrganizationDomain,
  OrganizationSignInProvider,
  type OrgRole,
} from '../../db/entities/index.ts';
import { prepared } from '../../db/prepared.ts';
import { domainRefusal, hasChallengeRecord, newChallenge } from '../../identity/domains.ts';
import {
  endOrganizationIdentities,
  organizationOfProvider,
  orgProviderKey,
  orgSecretBinding,
  unlinkIdentity,
} from '../../identity/people.ts';
import { checkIssuer } from '../../identity/providers.ts';
import type { Handlers, OperationContext, Preflights } from '../pipeline.ts';
import { problems } from '../problem.ts';
import { SHOWN_ONCE_HEADERS } from '../shown-once.ts';
import { findOrganization, findOrganizationId, takeOrganizationTurn } from './organizations.ts';
import { callersAccount } from './user.ts';

// Sign-in methods of the caller, and an organization's domains and identity provider (src/identity).

function serializeDomain(row: IOrganizationDomain): Schemas.Domain {
  return {
    domain: row.domain,
    verified: Boolean(row.verifiedAt),
    verifiedAt: row.verifiedAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

export const identityHandlers = {
  async listIdentities(op) {
    const rows = await op.em.find(Identity, { user: op.caller.userId }, { orderBy: { createdAt: 'asc' } });
    const orgIds = rows.flatMap((r) => organizationOfProvider(r.provider) ?? []);
    const organizations = orgIds.length
      ? await op.em.find(Organization, { id: { $in: orgIds } }, { populate: ['account'] })
      : [];
    const handleOf = new Map(organizations.map((o) => [o.id, o.account.handle]));
    const requiring = new Set<string>();
    for (const id of new Set(orgIds)) if (await requiresItsProvider(op, id)) requiring.add(id);
    return {
      status: 200,
      body: {
        items: rows.map((r) => ({
          id: r.id,
          provider: wireProvider(r.provider),
          organization: handleOf.get(organizationOfProvider(r.provider) ?? '') ?? null,
          email: r.email ?? null,
          emailVerified: r.emailVerified,
          requiredByOrganization: requiring.has(organizationOfProvider(r.provider) ?? ''),
          createdAt: r.createdAt.toISOString(),
        })),
      },
    };
  },

  async unlinkIdentity(op) {
    const identity = await op.em.findOne(Identity, { id: op.params.identity!, user: op.caller.userId });
    const organizationId = identity && organizationOfProvider(identity.provider);
    if (organizationId && (await requiresItsProvider(op, organizationId))) {
      throw problems.conflict(
        'Your organization requires signing in through its provider: this sign-in method stays while you are a member.',
      );
    }
    const outcome = await unlinkIdentity(op.em, op.caller.userId, op.params.identity!);
    if (outcome === 'not_found') throw problems.notFound('You have no such sign-in method.');
    if (outcome === 'last') throw problems.conflict('Your last sign-in method cannot be removed.');
    op.audit('identity.unlink', 'identity', op.params.identity!, {}, await callersAccount(op));
    await op.em.flush();
    return { status: 204 };
  },

  async listDomains(op) {
    const organizationId = await findOrganizationId(op);
    const rows = await op.em.find(
      OrganizationDomain,
      { organization: organizationId },
      { orderBy: { domain: 'asc' } },
    );
    return { status: 200, body: { items: rows.map(serializeDomain) } };
  },

  async addDomain(op) {
    const organization = await findOrganization(op);
    const domain = String(op.body.domain);
    const refusal = domainRefusal(domain);
    if (refusal) throw problems.badRequest(refusal, '/body/domain');
    const elsewhere = await op.em.findOne(OrganizationDomain, {
      domain,
      verifiedAt: { $ne: null },
      organization: { $ne: organization.id },
    });
    if (elsewhere) throw problems.conflict(`${domain} is verified by another organization.`);
    const challenge = newChallenge(domain);
    // The organization's domains take their turn: a second request for the same domain waits, finds it and
    // issues a new challenge, as it would arriving later, rather than running into the unique key (409).
    await takeOrganizationTurn(op, organization.id);
    let row = await op.em.findOne(OrganizationDomain, { organization: organization.id, domain });
    if (row) row.verificationTokenHash = challenge.hash;
    else
      row = op.em.create(OrganizationDomain, {
        organization,
        domain,
        verificationTokenHash: challenge.hash,
        verifiedAt: null,
      });
    op.audit('domain.add', 'organization_domain', row.id, { domain });
    await op.em.flush();
    return {
      status: 201,
      headers: SHOWN_ONCE_HEADERS,
      body: { ...serializeDomain(row), txtRecord: challenge.record },
    };
  },

  async removeDomain(op) {
    const row = await findDomain(op);
    op.em.remove(row);
    // What the organization's provider vouched for at this domain was trusted because the organization held
    // it; without the domain, those e-mails are no longer verified (they opened invitations of whoever
    // verifies the domain next).
    const { affectedRows: unverified } = await op.sql<{ affectedRows: number }>(
      `update identities set email_verified = false
        where provider = ? and email_verified and lower(split_part(email, '@', 2)) = ?`,
      [orgProviderKey(row.organization.id), row.domain],
      'run',
    );
    op.audit('domain.remove', 'organization_domain', row.id, {
      domain: row.domain,
      unverifiedEmails: unverified,
    });
    await op.em.flush();
    return { status: 204 };
  },

  async verifyDomain(op) {
    const row = await findDomain(op);
    if (!row.verifiedAt) {
      // Looked up before the transaction (identityPreflights), for the value stored then.
      const checked = op.preflight as DomainCheck | undefined;
      if (!checked || !Buffer.from(row.verificationTokenHash).equals(checked.tokenHash))
        throw problems.conflict(
          `A new TXT value was issued for ${row.domain} while the old one was looked up. Publish the new value and verify again.`,
        );
      if (!checked.found)
        throw problems.conflict(
          `No TXT record with the expected value was found at _l10n-verification.${row.domain}. Publish it and try again.`,
        );
      row.verifiedAt = new Date();
      op.audit('domain.verify', 'organization_domain', row.id, { domain: row.domain });
      try {
        await op.em.flush();
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException)
          throw problems.conflict(`${row.domain} is verified by another organization.`);
        throw error;
      }
    }
    return { status: 200, body: serializeDomain(row) };
  },

  async getIdentityProvider(op) {
    const organizationId = await findOrganizationId(op);
    const row = await op.em.findOne(OrganizationSignInProvider, { organization: organizationId });
    if (!row) throw problems.notFound(`"${op.target!.handle}" has no identity provider.`);
    return { status: 200, body: serializeProvider(row, op.service.config.baseUrl) };
  },

  async setIdentityProvider(op) {
    const organization = await findOrganization(op);
    // Its provider is set one request at a time: a second, arriving together, waits and then finds the row
    // this one stores (it ran into the row's unique key, a 409, where a PUT is answered as arriving later).
    await takeOrganizationTurn(op, organization.id);
    // The issuer was checked before the transaction (identityPreflights).
    const issuer = issuerOf(op.body);
    let row = await op.em.findOne(OrganizationSignInProvider, { organization: organization.id });
    const clientId = String(op.body.clientId);
    const secret: string | undefined = op.body.clientSecret;
    // Checked before the fetch too, and again here on the row as it is now.
    const missing = secretRefusal(op.body, row && { ...row, hasSecret: Boolean(row.clientSecretEncrypted) });
    if (missing) throw missing;
    const storedSecret =
      !secret && row?.clientSecretEncrypted
        ? op.service.cipher.decrypt(Buffer.from(row.clientSecretEncrypted), orgSecretBinding(organization.id))
        : undefined;
    // The identities a provider issued are its own: a new issuer could name the same subjects (`alice`)
    // and sign in as the people the old one signed in, with whatever else their accounts hold. They end
    // with the issuer; the people keep their accounts and any other sign-in method.
    const identitiesEnded =
      row && row.issuer !== issuer ? await endOrganizationIdentities(op.em, organization.id) : 0;
    const fields = {
      kind: 'oidc' as const,
      issuer,
      clientId,
      clientSecretEncrypted: op.service.cipher.encrypt(
        secret ?? storedSecret!,
        orgSecretBinding(organization.id),
      ),
      enabled: true,
      enrollRole: op.body.enrollRole ?? null,
      required: Boolean(op.body.required),
    };
    if (row) Object.assign(row, fields);
    else row = op.em.create(OrganizationSignInProvider, { organization, ...fields });
    op.audit('identity_provider.set', 'organization_identity_provider', row.id, {
      issuer,
      clientId: fields.clientId,
      enrollRole: fields.enrollRole,
      required: fields.required,
      ...(identitiesEnded > 0 ? { identitiesEnded } : {}),
    });
    await op.em.flush();
    return { status: 200, body: serializeProvider(row, op.service.config.baseUrl) };
  },

  async removeIdentityProvider(op) {
    const organization = await findOrganization(op);
    // Locked, so a second removal racing this one waits, finds nothing and records nothing.
    const row = await op.em.findOne(
      OrganizationSignInProvider,
      { organization: organization.id },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (row) {
      // Its identities end with it: a provider set later, at another issuer, must not inherit them.
      const identitiesEnded = await endOrganizationIdentities(op.em, organization.id);
      op.em.remove(row);
      op.audit('identity_provider.remove', 'organization_identity_provider', row.id, { identitiesEnded });
      await op.em.flush();
    }
    return { status: 204 };
  },
} satisfies Partial<Handlers>;

// Identities are stored with the provider that made them: a built-in one by its id, an organization's as
// `org:<organization id>`; the wire names the latter `organization` (and its handle apart).
const BUILT_IN_PROVIDERS = ['github', 'google', 'oidc'] as const;
function wireProvider(stored: string): Schemas.Identity['provider'] {
  const builtIn = BUILT_IN_PROVIDERS.find((id) => id === stored);
  if (builtIn) return builtIn;
  if (organizationOfProvider(stored)) return 'organization';
  throw new Error(`identity stored with an unknown provider "${stored}"`);
}

function serializeProvider(
  row: {
    issuer: string;
    clientId: string;
    clientSecretEncrypted?: unknown;
    enrollRole?: OrgRole | null;
    required: boolean;
    updatedAt: Date;
  },
  baseUrl: string,
): Schemas.IdentityProvider {
  return {
    issuer: row.issuer,
    clientId: row.clientId,
    hasClientSecret: Boolean(row.clientSecretEncrypted),
    enrollRole: row.enrollRole ?? null,
    required: row.required,
    callbackUrl: `${baseUrl}/signin/callback/org`,
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The domain named in the path, of the organization named in the path; 404 when it has no such domain. */
async function findDomain(op: OperationContext) {
  const organization = await findOrganization(op);
  // Locked until the write commits (removing or verifying it), as findByHandle locks its rows.
  const row = await op.em.findOne(
    OrganizationDomain,
    { organization: organization.id, domain: op.params.domain! },
    { lockMode: LockMode.PESSIMISTIC_WRITE },
  );
  if (!row) throw problems.notFound(`"${organization.account.handle}" has no domain ${op.params.domain}.`);
  return row;
}

/** The issuer as stored: without the trailing slashes an issuer URL is often written with. */
const issuerOf = (body: { issuer: string }) => String(body.issuer).replace(/\/+$/, '');

/** What verifyDomain's preflight found: the TXT value it looked for (by its hash), and whether it was there. */
interface DomainCheck {
  tokenHash: Buffer;
  found: boolean;
}

const storedProvider = prepared(
  `select issuer, client_id as "clientId", client_secret_encrypted is not null as "hasSecret"
     from organization_sign_in_providers where organization_id = ?`,
);

/**
 * The 400 for a provider saved without a client secret when none can be kept. The stored secret goes on
 * being sent only to the provider and client it was given for: kept across a change of issuer or client id,
 * it would be sent to whatever token endpoint the new issuer names, and the "write-only" secret could be
 * read out by pointing the issuer at a server of one's own.
 */
function secretRefusal(
  body: { issuer: string; clientId: string; clientSecret?: string },
  stored: { issuer: string; clientId: string; hasSecret: boolean } | null | undefined,
) {
  if (body.clientSecret) return undefined;
  const sameClient = stored?.issuer === issuerOf(body) && stored.clientId === String(body.clientId);
  if (sameClient && stored?.hasSecret) return undefined;
  return problems.badRequest(
    stored
      ? 'A new issuer or client id needs its client secret: the stored one is kept only for the same client.'
      : 'A client secret is required.',
    '/body/clientSecret',
  );
}

const domainToCheck = prepared(
  'select verification_token_hash, verified_at from organization_domains where organization_id = ? and domain = ?',
);

/**
 * The network waits of these operations, before their transactions (Preflights in pipeline.ts): a slow
 * issuer holds its request up to 10 s and a DNS lookup up to 6 s, which inside a transaction held a
 * connection of the pool, and the domain row's lock, all that time.
 */
export const identityPreflights = {
  async setIdentityProvider(op) {
    const issuer = issuerOf(op.body);
    if (op.service.config.nodeEnv === 'production' && !issuer.startsWith('https://'))
      throw problems.badRequest('The issuer must be an https URL.', '/body/issuer');
    // A request that cannot be saved whatever the issuer says is refused without fetching it.
    const [stored] = await op.sql<{ issuer: string; clientId: string; hasSecret: boolean }[]>(
      storedProvider,
      [await findOrganizationId(op)],
    );
    const missing = secretRefusal(op.body, stored);
    if (missing) throw missing;
    // Fetched through the address guard, so an issuer at an internal address is refused before anything
    // is stored (src/identity/org-provider-fetch.ts).
    const broken = await checkIssuer(issuer, op.service.config);
    if (broken) throw problems.badRequest(broken, '/body/issuer');
  },

  async verifyDomain(op): Promise<DomainCheck | undefined> {
    const organizationId = await findOrganizationId(op);
    const [row] = await op.sql<{ verification_token_hash: Buffer; verified_at: Date | null }[]>(
      domainToCheck,
      [organizationId, op.params.domain],
    );
    // Gone or verified already: the handler answers that, with the row it locks.
    if (!row || row.verified_at) return undefined;
    const tokenHash = Buffer.from(row.verification_token_hash);
    return {
      tokenHash,
      found: await hasChallengeRecord(op.params.domain, tokenHash, op.service.config.dnsServers),
    };
  },
} satisfies Preflights;

/**
 * Whether the organization requires its provider of the caller (it requires it, and they are a member):
 * removing the identity it issued would leave a personal provider they linked as their way in, around the
 * requirement, so that identity stays while they are a member.
 */
async function requiresItsProvider(op: OperationContext, organizationId: string): Promise<boolean> {
  const required = await op.em.count(OrganizationSignInProvider, {
    organization: organizationId,
    required: true,
    enabled: true,
  });
  return (
    required > 0 &&
    (await op.em.count(Membership, { organization: organizationId, user: op.caller.userId })) > 0
  );
}
