import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { hashToken } from '../authz/account-tokens.ts';
import {
  type IInvitation,
  Invitation,
  type IOrganization,
  Organization,
  type OrgRole,
} from '../db/entities/index.ts';

/** How long an invitation can be accepted. */
const INVITATION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;
// A recognisable prefix lets secret scanners spot a leaked invitation link, as with account tokens.
const INVITATION_TOKEN_PREFIX = 'l10ninv_';

/** Stores a pending invitation and returns it with its single-use token, which exists only here. */
export function issueInvitation(
  em: EntityManager,
  input: { organization: IOrganization; email: string; role: OrgRole; invitedById: string; now?: Date },
): { row: IInvitation; token: string } {
  const token = `${INVITATION_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const now = input.now ?? new Date();
  const row = em.create(Invitation, {
    organization: input.organization,
    email: input.email,
    role: input.role,
    // Only the hash is stored, so a database leak hands out no invitations.
    tokenHash: hashToken(token),
    status: 'pending',
    expiresAt: new Date(now.getTime() + INVITATION_LIFETIME_MS),
    invitedBy: input.invitedById,
    respondedAt: null,
  });
  return { row, token };
}

/** The status a reader should see: a pending invitation past its expiry is expired, stored or not. */
export function effectiveStatus(invitation: Pick<IInvitation, 'status' | 'expiresAt'>, now = new Date()) {
  return invitation.status === 'pending' && invitation.expiresAt <= now ? 'expired' : invitation.status;
}

/**
 * What an invitation link stands for, shown to the person who opened it before they answer: the
 * organization, the role and the invited e-mail. Whoever holds the link's secret may see this much; the
 * answer itself goes through acceptInvitation / declineInvitation, which check the e-mail.
 */
export async function describeInvitation(em: EntityManager, token: string) {
  if (token.length === 0 || token.length > 200) return null;
  const invitation = await em.findOne(Invitation, { tokenHash: hashToken(token) });
  if (!invitation) return null;
  const organization = await em.findOneOrFail(Organization, invitation.organization.id, {
    populate: ['account'],
  });
  return {
    organization: { handle: organization.account.handle, displayName: organization.account.displayName },
    role: invitation.role,
    email: invitation.email,
    status: effectiveStatus(invitation),
  };
}
