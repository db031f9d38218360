import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import type { Role } from '../../authz/policy.ts';
import {
  Account,
  type IOrganization,
  Organization,
  type OrgRole,
  Project,
  User,
} from '../../db/entities/index.ts';
import { prepared } from '../../db/prepared.ts';
import { createOrganization } from '../../domain/organizations.ts';
import { assertAccountHandle } from '../../domain/validation.ts';
import { endOrganizationIdentities } from '../../identity/people.ts';
import { assertIfMatch, organizationEtag, storedRevision, taggedResponse } from '../etag.ts';
import { callerListOwner, page, pageRequest } from '../pagination.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';
import { problems } from '../problem.ts';

interface OrganizationFields {
  id: string;
  handle: string;
  displayName: string;
  visibility: 'private' | 'public';
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The caller's membership role, from the roles the pipeline resolved on the organization's account. */
function membershipRole(roles: Set<Role>): OrgRole | null {
  if (roles.has('organization_admin')) return 'admin';
  if (roles.has('organization_member')) return 'member';
  return null;
}

/** An organization is named by its account, so it shows the account's id, handle and settings. */
export function serializeOrganization(
  account: OrganizationFields,
  role: OrgRole | null,
): Schemas.Organization {
  return {
    id: account.id,
    handle: account.handle,
    displayName: account.displayName,
    visibility: account.visibility,
    role,
    etag: organizationEtag(account.id, account.revision),
    createdAt: account.createdAt.toISOString(),
    updatedAt: account.updatedAt.toISOString(),
  };
}

/**
 * The organization behind the operation's target account, with its account loaded in the operation's
 * EntityManager. A personal account passes the policy for `self` but is no organization: 404.
 */
export async function findOrganization(op: OperationContext): Promise<IOrganization> {
  const account = op.target!.account;
  const organization =
    account.kind === 'organization'
      ? await op.em.findOne(Organization, { account: account.id }, { populate: ['account'] })
      : null;
  if (!organization) throw noOrganization(account.handle);
  return organization;
}

const organizationOfAccount = prepared('select id from organizations where account_id = ?');

/**
 * The organization's changes that must not overlap (its memberships, its domains) take their turn: its row
 * locked until the transaction ends, in a mode that leaves inserts referencing it (an invitation, a
 * membership) free to take their key-share lock. The pipeline's holdMembership does the same by account.
 */
export async function takeOrganizationTurn(op: OperationContext, organizationId: string): Promise<void> {
  await op.sql('select 1 from organizations where id = ? for no key update', [organizationId]);
}

/**
 * The id of the organization behind the operation's target account, for reads that need nothing else of
 * it: one prepared statement, no entity. A personal account is no organization: 404, as findOrganization.
 */
export async function findOrganizationId(op: OperationContext): Promise<string> {
  const target = op.target!;
  const [row] =
    target.kind === 'organization'
      ? await op.sql<{ id: string }[]>(organizationOfAccount, [target.accountId])
      : [];
  if (!row) throw noOrganization(target.handle);
  return row.id;
}

export function noOrganization(handle: string) {
  return problems.notFound(`No organization "${handle}", or you cannot see it.`);
}

interface MyOrganizationRow {
  id: string;
  handle: string;
  display_name: string;
  visibility: 'private' | 'public';
  revision: number;
  created_at: Date;
  updated_at: Date;
  role: OrgRole;
}

export const organizationHandlers = {
  async listOrganizations(op) {
    const request = pageRequest(op.query, 'organizations', callerListOwner(op.caller));
    const restrictedTo = op.caller.restrictedToAccountId ?? null;
    const rows = await op.sql<MyOrganizationRow[]>(
      `select a.id, a.handle, a.display_name, a.visibility, a.revision, a.created_at, a.updated_at, m.role
         from memberships m
         join organizations o on o.id = m.organization_id
         join accounts a on a.id = o.account_id
        where m.user_id = ?
          and (?::uuid is null or a.id > ?::uuid)
          and (?::uuid is null or a.id = ?::uuid)
        order by a.id asc limit ?`,
      [
        op.caller.userId,
        request.afterId ?? null,
        request.afterId ?? null,
        restrictedTo,
        restrictedTo,
        request.limit + 1,
      ],
    );
    const body = page(rows, request, (row) =>
      serializeOrganization(
        {
          id: row.id,
          handle: row.handle,
          displayName: row.display_name,
          visibility: row.visibility,
          revision: row.revision,
          createdAt: new Date(row.created_at),
          updatedAt: new Date(row.updated_at),
        },
        row.role,
      ),
    );
    return { status: 200, body };
  },

  async createOrganization(op) {
    const { handle, displayName, visibility } = op.body as {
      handle: string;
      displayName: string;
      visibility?: 'private' | 'public';
    };
    assertAccountHandle(handle, '/body/handle');
    if (await op.em.count(Account, { handle })) {
      throw problems.conflict(`The handle "${handle}" is already taken.`, '/body/handle');
    }
    const creator = op.em.getReference(User, op.caller.userId);
    const { organization, account } = createOrganization(op.em, creator, { handle, displayName, visibility });
    op.audit('organization.create', 'organization', organization.id, { handle, visibility }, account);
    await op.em.flush();
    return taggedResponse(201, serializeOrganization(account, 'admin'), {
      Location: `/api/v1/organizations/${account.handle}`,
    });
  },

  async getOrganization(op) {
    await findOrganizationId(op);
    // The account the pipeline read, as an entity mapped from that row: no statement of its own.
    // Not a conditional read: the body holds the caller's role, which moves without the revision (a 304
    // kept a member promoted to admin on the copy that said "member").
    return taggedResponse(200, serializeOrganization(op.target!.account, membershipRole(op.target!.roles)));
  },

  async updateOrganization(op) {
    const organization = await findOrganization(op);
    const account = organization.account;
    // Locked until the update commits and read again under the lock: the account the pipeline read before
    // the transaction may be a revision behind, and If-Match is checked against the one this update replaces.
    await op.sql('select 1 from accounts where id = ? for no key update', [account.id]);
    await op.em.refresh(account);
    const changes: { displayName?: string; visibility?: 'private' | 'public' } = {};
    if (op.body.displayName !== undefined && op.body.displayName !== account.displayName)
      changes.displayName = op.body.displayName;
    if (op.body.visibility !== undefined && op.body.visibility !== account.visibility)
      changes.visibility = op.body.visibility;
    const changed = Object.keys(changes).length > 0;
    // A stale If-Match with nothing to change is this update made before (a retry after a lost answer).
    assertIfMatch(
      op,
      organizationEtag(account.id, account.revision),
      `organization "${account.handle}"`,
      !changed,
    );
    if (changed) {
      const before = { displayName: account.displayName, visibility: account.visibility };
      op.em.assign(account, changes);
      op.audit('organization.update', 'organization', organization.id, { before, after: changes });
      await op.em.flush();
    }
    // The database moved the revision if the update changed anything; otherwise it is the one read.
    const revision = changed ? await storedRevision(op, 'accounts', account.id) : account.revision;
    return taggedResponse(200, {
      ...serializeOrganization(account, membershipRole(op.target!.roles)),
      etag: organizationEtag(account.id, revision),
    });
  },

  async deleteOrganization(op) {
    // Every membership locked before the account: a member's write holds its membership until it commits
    // (holdMembership in the pipeline) and then needs the account row for its foreign key, so the delete
    // waits for such writes first; locking the account first, each waited for the other, a deadlock.
    await op.sql(
      `select m.id from memberships m join organizations o on o.id = m.organization_id
        where o.account_id = ? for update of m`,
      [op.target!.accountId],
    );
    // The account row locked next: a second delete of the same organization waits for this one and then
    // finds nothing (404), instead of both writing their audit event and deadlocking on the delete.
    const [locked] = await op.sql<{ revision: number }[]>(
      'select revision from accounts where id = ? for update',
      [op.target!.accountId],
    );
    if (!locked) throw noOrganization(op.target!.handle);
    // A delete sent with the etag it read removes that revision of the organization or nothing.
    assertIfMatch(
      op,
      organizationEtag(op.target!.accountId, locked.revision),
      `organization "${op.target!.handle}"`,
    );
    const organization = await findOrganization(op);
    const account = organization.account;
    const projects = await op.em.count(Project, { account: account.id });
    // The identities its provider issued end with it (endOrganizationIdentities says why).
    const identitiesEnded = await endOrganizationIdentities(op.em, organization.id);
    // Recorded before the delete: the event outlives the account (its account_id becomes null), so the
    // details say what was deleted.
    op.audit('organization.delete', 'organization', organization.id, {
      handle: account.handle,
      accountId: account.id,
      projects,
      identitiesEnded,
    });
    await op.em.flush();
    // One statement in the operation's transaction: the foreign keys cascade from the account to the
    // organization, its memberships and invitations, and to everything the account owns (projects,
    // voice and glossary versions, settings, models, tokens).
    await op.em.nativeDelete(Account, { id: account.id });
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
