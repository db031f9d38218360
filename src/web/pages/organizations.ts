// An organization's page: profile and visibility; members with roles (change, remove, leave);
// invitations (create and copy the link once, revoke); and the page where an invitee accepts.
import type { Response, Router } from 'express';
import type { OperationResponse, Pipeline } from '../../api/pipeline.ts';
import type { Orm } from '../../db/orm.ts';
import { describeInvitation } from '../../domain/invitations.ts';
import { asciiEmail } from '../../identity/domains.ts';
import { verifiedEmails } from '../../identity/people.ts';
import { afterSave, type EditForm, editFormView, readFormBase, saveInPlace } from '../edit-in-place.ts';
import {
  edited,
  formErrors,
  isCursor,
  isOk,
  type Kit,
  listPage,
  type PageContext,
  pathOf,
  text,
} from '../kit.ts';
import { shownOnce } from '../shown-once.ts';

interface Organization {
  handle: string;
  displayName: string;
  visibility: 'private' | 'public';
  role: 'admin' | 'member' | null;
  etag: string;
}

/** The profile form's fields, with their labels: an organization as the form shows it. */
const PROFILE_FIELDS = ['displayName', 'visibility'] as const;
type ProfileValues = Record<(typeof PROFILE_FIELDS)[number], string>;
const PROFILE_LABELS: ProfileValues = { displayName: 'Display name', visibility: 'Visibility' };
const profileValuesOf = (org: Organization): ProfileValues => ({
  displayName: org.displayName,
  visibility: org.visibility,
});

/** The invitation link: opened in a browser, it shows what the invitation is and asks for an answer. */
const INVITATION_PATH = '/invitations/answer';
const ROLE = { admin: 'organization_admin', member: 'organization_member' } as const;

/** What the page of a new invitation shows: who is invited, as what, until when, and the link (its secret). */
type CreatedInvitation = { email: string; role: string; expiresAt: string; acceptToken: string };

export function organizationPages(
  router: Router,
  kit: Kit,
  pipeline: Pipeline,
  orm: Orm,
  config: { baseUrl: string; cookieKeys: readonly string[] },
): void {
  const { baseUrl } = config;
  // The link carries the invitation's secret, which exists only in createInvitation's answer: the form
  // leads to a page that shows it once (shown-once.ts), so a reload there does not invite again.
  const created = shownOnce<CreatedInvitation & { org: string }>(
    config.cookieKeys,
    'invitation-created',
    baseUrl.startsWith('https:'),
  );
  interface Extra {
    status?: number;
    profile?: EditForm<ProfileValues>;
    invite?: object;
    notice?: string;
    /** Where the member and invitation lists start: the cursors the page's "Next" links carried. */
    after?: { members?: unknown; invitations?: unknown };
  }

  async function orgPage(res: Response, pc: PageContext, handle: string, extra: Extra = {}) {
    const r = await pc.call('getOrganization', { params: { org: handle } });
    if (!isOk(r)) return kit.problemPage(res, pc, r);
    const org = r.body as Organization;
    const role = org.role ? ROLE[org.role] : 'public_account';
    const can = (scope: string) => pipeline.allows(role, scope);
    const after = extra.after ?? {};
    const members = can('members:read')
      ? await listPage(pc.call, 'listMembers', { params: { org: handle } }, after.members)
      : null;
    const invitations = can('members:write')
      ? await listPage(
          pc.call,
          'listInvitations',
          { params: { org: handle }, query: { status: 'pending' } },
          after.invitations,
        )
      : null;
    for (const list of [members, invitations])
      if (list && 'failed' in list) return kit.problemPage(res, pc, list.failed);
    const itemsOf = (list: typeof members) => (list && 'items' in list ? list.items : []);
    const nextOf = (list: typeof members) => (list && 'items' in list ? list.next : undefined);
    kit.render(
      res,
      pc,
      'organization',
      {
        title: org.displayName,
        section: 'dashboard',
        crumbs: [{ href: '/dashboard', label: 'Dashboard' }, { label: `@${handle}` }],
        acting: { handle, role },
        notice: extra.notice,
        org,
        me: pc.userHandle,
        can: {
          edit: can('organization:write'),
          manageMembers: can('members:write'),
          leave: org.role !== null,
          signIn: can('organization:admin'),
          seeMembers: members !== null,
        },
        members: itemsOf(members),
        invitations: itemsOf(invitations),
        // Each list a page at a time: the link to its next page, and back to its start on a later one.
        // A list's links keep where the other list is, so paging through one leaves the other in place.
        pages: {
          members: {
            next: nextOf(members),
            later: isCursor(after.members),
            base: pageBase(handle, 'invitations_after', after.invitations),
          },
          invitations: {
            next: nextOf(invitations),
            later: isCursor(after.invitations),
            base: pageBase(handle, 'members_after', after.members),
          },
        },
        // The form carries the revision and the values it shows (edit-in-place.ts).
        profile: editFormView(extra.profile, profileValuesOf(org), org.etag),
        invite: extra.invite ?? { values: { role: 'member' }, fields: {}, form: [] },
      },
      extra.status,
    );
  }

  /** The organization's page with the other list's position, where one list's pager links start. */
  const pageBase = (handle: string, otherParam: string, otherCursor: unknown) =>
    isCursor(otherCursor)
      ? `${pathOf('orgs', handle)}?${new URLSearchParams({ [otherParam]: otherCursor })}`
      : pathOf('orgs', handle);

  const orgPath = (pc: PageContext, handle: string, notice: string) =>
    kit.withNotice(pc, pathOf('orgs', handle), notice);

  /** After a member or invitation action: back to the page, or the problem page when it failed. */
  function afterward(res: Response, pc: PageContext, r: OperationResponse, handle: string, notice: string) {
    if (isOk(r)) return res.redirect(303, orgPath(pc, handle, notice));
    if (r.status === 409 || r.status === 400)
      return orgPage(res, pc, handle, {
        status: r.status,
        notice: formErrors(r).form.join(' ') || Object.values(formErrors(r).fields).join(' '),
      });
    return kit.problemPage(res, pc, r);
  }

  router.get(
    '/orgs/:org',
    kit.page(async (req, res, pc) => {
      await orgPage(res, pc, String(req.params.org), {
        notice: kit.noticeOf(req, pc),
        after: { members: req.query.members_after, invitations: req.query.invitations_after },
      });
    }),
  );

  router.post(
    '/orgs/:org',
    ...kit.action(async (req, res, pc) => {
      const handle = String(req.params.org);
      const params = { org: handle };
      const sent = readFormBase<ProfileValues>(req.body, PROFILE_FIELDS);
      // A name the form gives back as it showed it is kept as stored (kit.edited).
      const typed = {
        displayName: edited(req.body, 'displayName', sent.base?.displayName),
        visibility: text(req.body, 'visibility'),
      };
      const outcome = await saveInPlace({
        typed,
        sent,
        fields: PROFILE_FIELDS,
        read: async () => {
          const r = await pc.call('getOrganization', { params });
          if (!isOk(r)) return r;
          const org = r.body as Organization;
          return { etag: org.etag, base: profileValuesOf(org) };
        },
        save: (changed, ifMatch) => pc.call('updateOrganization', { params, ifMatch, body: changed }),
      });
      const next = afterSave(outcome, {
        noun: 'organization',
        labels: PROFILE_LABELS,
        formStatuses: [400],
      });
      if ('problem' in next) return kit.problemPage(res, pc, next.problem);
      if ('notice' in next) return res.redirect(303, orgPath(pc, handle, next.notice));
      await orgPage(res, pc, handle, { status: next.status, profile: next.form });
    }),
  );

  router.post(
    '/orgs/:org/members/:user/role',
    ...kit.action(async (req, res, pc) => {
      const params = { org: String(req.params.org), user: String(req.params.user) };
      const r = await pc.call('updateMember', { params, body: { role: text(req.body, 'role') } });
      afterward(res, pc, r, params.org, `@${params.user} is now ${text(req.body, 'role')}.`);
    }),
  );

  router.post(
    '/orgs/:org/members/:user/remove',
    ...kit.action(async (req, res, pc) => {
      const params = { org: String(req.params.org), user: String(req.params.user) };
      const r = await pc.call('removeMember', { params });
      afterward(res, pc, r, params.org, `@${params.user} was removed.`);
    }),
  );

  router.post(
    '/orgs/:org/leave',
    ...kit.action(async (req, res, pc) => {
      const org = String(req.params.org);
      const r = await pc.call('leaveOrganization', { params: { org } });
      if (isOk(r)) return res.redirect(303, kit.withNotice(pc, '/dashboard', `You left @${org}.`));
      afterward(res, pc, r, org, '');
    }),
  );

  router.post(
    '/orgs/:org/invitations',
    ...kit.action(async (req, res, pc) => {
      const org = String(req.params.org);
      const values = { email: text(req.body, 'email'), role: text(req.body, 'role') };
      const r = await pc.call('createInvitation', { params: { org }, body: values });
      if (!isOk(r)) {
        if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
        return orgPage(res, pc, org, { status: r.status, invite: { values, ...formErrors(r) } });
      }
      const { email, role, expiresAt, acceptToken } = r.body as CreatedInvitation;
      await created.showAt(res, `${pathOf('orgs', org)}/invitations/created`, {
        org,
        email,
        role,
        expiresAt,
        acceptToken,
      });
    }),
  );

  router.get(
    '/orgs/:org/invitations/created',
    kit.page(async (req, res, pc) => {
      const org = String(req.params.org);
      const invitation = await created.take(req, res);
      if (!invitation || invitation.org !== org) {
        const notice =
          "An invitation's link is shown once, right after the invitation is made, and this one was shown already. If it was not copied, revoke the invitation and invite again.";
        return res.redirect(303, kit.withNotice(pc, pathOf('orgs', org), notice));
      }
      kit.render(res, pc, 'invitation-created', {
        title: 'Invitation created',
        section: 'dashboard',
        crumbs: [
          { href: '/dashboard', label: 'Dashboard' },
          { href: pathOf('orgs', org), label: `@${org}` },
          { label: 'Invitation' },
        ],
        org,
        invitation,
        link: `${baseUrl}${INVITATION_PATH}?token=${encodeURIComponent(invitation.acceptToken)}`,
      });
    }),
  );

  router.post(
    '/orgs/:org/invitations/:invitation/revoke',
    ...kit.action(async (req, res, pc) => {
      const params = { org: String(req.params.org), invitation: String(req.params.invitation) };
      const r = await pc.call('revokeInvitation', { params });
      afterward(res, pc, r, params.org, 'Invitation revoked.');
    }),
  );

  // The invitee's side: the link opens this page (signing in first if needed), which answers by POST.
  router.get(
    INVITATION_PATH,
    kit.page(async (req, res, pc) => {
      res.set('Cache-Control', 'no-store');
      const token = typeof req.query.token === 'string' ? req.query.token : '';
      const em = orm.em.fork();
      const invitation = await describeInvitation(em, token);
      const open = invitation?.status === 'pending';
      // The API lets only the invited person answer (a verified e-mail of theirs is the invited one): someone
      // else signed in is told so here, with what to do, instead of buttons that end in "Not allowed".
      const forYou = open && (await verifiedEmails(em, pc.who.userId)).has(asciiEmail(invitation.email));
      kit.render(
        res,
        pc,
        'invitation-accept',
        {
          title: !invitation
            ? 'No such invitation'
            : open
              ? `Invitation to ${invitation.organization.displayName}`
              : 'Invitation no longer open',
          section: 'dashboard',
          token,
          invitation,
          forYou,
        },
        invitation ? 200 : 404,
      );
    }),
  );

  router.post(
    INVITATION_PATH,
    ...kit.action(async (req, res, pc) => {
      const accept = text(req.body, 'answer') === 'accept';
      const r = await pc.call(accept ? 'acceptInvitation' : 'declineInvitation', {
        body: { token: text(req.body, 'token') },
      });
      if (!isOk(r)) return kit.problemPage(res, pc, r);
      if (accept) {
        const org = (r.body as Organization).handle;
        return res.redirect(303, orgPath(pc, org, `Welcome to @${org}.`));
      }
      res.redirect(303, kit.withNotice(pc, '/dashboard', 'Invitation declined.'));
    }),
  );
}
