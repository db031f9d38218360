import { LockMode } from '@mikro-orm/core';
import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { hashToken } from '../../authz/account-tokens.ts';
import {
  type IInvitation,
  Invitation,
  type InvitationStatus,
  type IOrganization,
  Membership,
  Organization,
  type OrgRole,
  User,
} from '../../db/entities/index.ts';
import { effectiveStatus, issueInvitation } from '../../domain/invitations.ts';
import { asciiEmail } from '../../identity/domains.ts';
import { verifiedEmails } from '../../identity/people.ts';
import { page, pageRequest } from '../pagination.ts';
import type { Handlers, OperationContext, PlainStatement, ProblemResponse } from '../pipeline.ts';
import { problems } from '../problem.ts';
import { SHOWN_ONCE_HEADERS } from '../shown-once.ts';
import { findOrganization, findOrganizationId, serializeOrganization } from './organizations.ts';

interface InvitationRow {
  id: string;
  email: string;
  role: OrgRole;
  status: InvitationStatus;
  expires_at: Date;
  responded_at: Date | null;
  created_at: Date;
  invited_by: string | null;
}

/**
 * An organization's invitations with the inviter's handle, keyset-paginated. `status` is what a reader
 * sees: a pending invitation past its expiry counts as expired whether or not that was stored yet.
 */
function invitationRows(
  sql: PlainStatement,
  organizationId: string,
  filter: { status?: InvitationStatus; afterId?: string; id?: string; limit: number },
): Promise<InvitationRow[]> {
  // The status filter is spelled on the stored columns rather than on the computed status, so the planner
  // can estimate it and read the (organization, id) index in order, stopping at the page size.
  const status = filter.status ?? null;
  return sql<InvitationRow[]>(
    `select i.id, i.email, i.role, i.expires_at, i.responded_at, i.created_at, a.handle as invited_by,
            case when i.status = 'pending' and i.expires_at <= now() then 'expired' else i.status end as status
       from invitations i
       left join accounts a on a.user_id = i.invited_by_id
      where i.organization_id = ?
        and (?::text is null
             or (?::text = 'pending' and i.status = 'pending' and i.expires_at > now())
             or (?::text = 'expired' and (i.status = 'expired' or (i.status = 'pending' and i.expires_at <= now())))
             or (?::text not in ('pending', 'expired') and i.status = ?::text))
        and (?::uuid is null or i.id > ?::uuid)
        and (?::uuid is null or i.id = ?::uuid)
      order by i.id asc limit ?`,
    [
      organizationId,
      status,
      status,
      status,
      status,
      status,
      filter.afterId ?? null,
      filter.afterId ?? null,
      filter.id ?? null,
      filter.id ?? null,
      filter.limit,
    ],
  );
}

function serializeInvitation(row: InvitationRow, organizationHandle: string): Schemas.Invitation {
  return {
    id: row.id,
    organization: organizationHandle,
    email: row.email,
    role: row.role,
    status: row.status,
    expiresAt: new Date(row.expires_at).toISOString(),
    invitedBy: row.invited_by,
    respondedAt: row.responded_at ? new Date(row.responded_at).toISOString() : null,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

const REVOKED_DETAIL = 'This invitation was revoked by the organization; ask an admin for a new one.';

/**
 * The invitation a token stands for, still pending, or the reason it cannot be answered. A lapsed one is
 * marked expired on the way, so the answer is a response (committed) rather than a thrown problem.
 */
async function pendingInvitationFor(
  op: OperationContext<'acceptInvitation' | 'declineInvitation'>,
): Promise<{ invitation: IInvitation; organization: IOrganization } | { refusal: ProblemResponse }> {
  const invitation = await op.em.findOne(Invitation, { tokenHash: hashToken(op.body.token) });
  if (!invitation) throw problems.notFound('No invitation matches this token.');
  const status = effectiveStatus(invitation);
  if (status === 'pending') {
    // Only the invited person answers: a verified e-mail of theirs must be the invited one.
    if (!(await verifiedEmails(op.em, op.caller.userId)).has(asciiEmail(invitation.email)))
      throw problems.forbidden(
        'This invitation is for another e-mail address. Sign in with a provider that has verified that address, then try again.',
      );
    const organization = await op.em.findOneOrFail(
      Organization,
      { id: invitation.organization.id },
      { populate: ['account'] },
    );
    return { invitation, organization };
  }
  if (status === 'accepted' || status === 'declined') {
    throw problems.conflict(`This invitation was already ${status}.`);
  }
  if (invitation.status === 'pending') {
    await op.em.nativeUpdate(Invitation, { id: invitation.id, status: 'pending' }, { status: 'expired' });
  }
  const gone = problems.gone(
    status === 'revoked'
      ? REVOKED_DETAIL
      : 'This invitation has expired; ask an admin of the organization for a new one.',
  );
  return { refusal: { status: gone.status, body: gone.toJSON(), headers: gone.headers } };
}

/**
 * Moves a pending invitation to its answer; 0 rows means a concurrent request got there first, and the
 * answer is the one arriving after it gets: revoked meanwhile, 410 as for any revoked invitation;
 * accepted or declined meanwhile, 409.
 */
async function answer(op: OperationContext, invitation: IInvitation, status: 'accepted' | 'declined') {
  const changed = await op.em.nativeUpdate(
    Invitation,
    { id: invitation.id, status: 'pending' },
    { status, respondedAt: new Date() },
  );
  if (changed === 1) return;
  const [now] = await op.sql<{ status: string }[]>('select status from invitations where id = ?', [
    invitation.id,
  ]);
  if (now?.status === 'revoked') throw problems.gone(REVOKED_DETAIL);
  throw problems.conflict(`This invitation was ${now?.status ?? 'answered'} in the meantime.`);
}

export const invitationHandlers = {
  async listInvitations(op) {
    const organizationId = await findOrganizationId(op);
    const request = pageRequest(op.query, 'invitations', organizationId);
    const rows = await invitationRows(op.sql, organizationId, {
      status: op.query.status ?? 'pending',
      afterId: request.afterId,
      limit: request.limit + 1,
    });
    return {
      status: 200,
      body: page(rows, request, (row) => serializeInvitation(row, op.target!.handle)),
    };
  },

  async createInvitation(op) {
    const organization = await findOrganization(op);
    const handle = organization.account.handle;
    const email = (op.body.email as string).toLowerCase();
    const role: OrgRole = op.body.role ?? 'member';
    // A member is the invited person when one of their sign-in methods verified the e-mail, the same test
    // acceptInvitation applies; the profile's e-mail proves nothing (anyone can type one, another's too).
    const members = await op.sql<unknown[]>(
      `select 1 from memberships m join identities i on i.user_id = m.user_id
        where m.organization_id = ? and i.email_verified and lower(i.email) = ?`,
      [organization.id, email],
    );
    if (members.length > 0) throw problems.conflict(`${email} is already a member of "${handle}".`);
    // A lapsed invitation no longer blocks a new one (the one-pending-per-e-mail index counts stored status).
    await op.em.nativeUpdate(
      Invitation,
      { organization: organization.id, email, status: 'pending', expiresAt: { $lte: new Date() } },
      { status: 'expired' },
    );
    if (await op.em.count(Invitation, { organization: organization.id, email, status: 'pending' })) {
      throw problems.conflict(
        `${email} already has a pending invitation to "${handle}"; revoke it to send a new one.`,
      );
    }
    const { row, token } = issueInvitation(op.em, {
      organization,
      email,
      role,
      invitedById: op.caller.userId,
    });
    op.audit('invitation.create', 'invitation', row.id, { email, role });
    await op.em.flush();
    const [stored] = await invitationRows(op.sql, organization.id, { id: row.id, limit: 1 });
    return {
      status: 201,
      headers: SHOWN_ONCE_HEADERS,
      body: { ...serializeInvitation(stored!, handle), acceptToken: token },
    };
  },

  async revokeInvitation(op) {
    const organization = await findOrganization(op);
    // Locked, so a second revocation racing this one sees it revoked and records nothing.
    const invitation = await op.em.findOne(
      Invitation,
      { id: op.params.invitation, organization: organization.id },
      { lockMode: LockMode.PESSIMISTIC_WRITE },
    );
    if (!invitation) {
      throw problems.notFound(`No invitation ${op.params.invitation} in "${organization.account.handle}".`);
    }
    // Idempotent: an invitation that can no longer be answered stays as it is.
    if (effectiveStatus(invitation) === 'pending') {
      invitation.status = 'revoked';
      op.audit('invitation.revoke', 'invitation', invitation.id, { email: invitation.email });
      await op.em.flush();
    }
    return { status: 204 };
  },

  async acceptInvitation(op) {
    const found = await pendingInvitationFor(op);
    if ('refusal' in found) return found.refusal;
    const { invitation, organization } = found;
    if (await op.em.count(Membership, { organization: organization.id, user: op.caller.userId })) {
      throw problems.conflict(`You are already a member of "${organization.account.handle}".`);
    }
    await answer(op, invitation, 'accepted');
    const membership = op.em.create(Membership, {
      organization,
      user: op.em.getReference(User, op.caller.userId),
      role: invitation.role,
    });
    op.audit(
      'invitation.accept',
      'invitation',
      invitation.id,
      { email: invitation.email, role: invitation.role, membershipId: membership.id },
      organization.account,
    );
    await op.em.flush();
    return { status: 200, body: serializeOrganization(organization.account, invitation.role) };
  },

  async declineInvitation(op) {
    const found = await pendingInvitationFor(op);
    if ('refusal' in found) return found.refusal;
    const { invitation, organization } = found;
    await answer(op, invitation, 'declined');
    op.audit(
      'invitation.decline',
      'invitation',
      invitation.id,
      { email: invitation.email },
      organization.account,
    );
    await op.em.flush();
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
