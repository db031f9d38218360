// The dashboard (your accounts with your role and their projects; create a project or an organization),
// an account's page, and a project's page (details, locales, edit, delete with a confirmation naming it).
import type { Router } from 'express';
import { sameResource } from '../../api/etag.ts';
import type { Pipeline } from '../../api/pipeline.ts';
import type { Role } from '../../authz/policy.ts';
import {
  afterSave,
  type EditForm,
  editFormView,
  NO_REVISION,
  readFormBase,
  readFormEtag,
  saveInPlace,
} from '../edit-in-place.ts';
import {
  allItems,
  type Crumb,
  edited,
  formErrors,
  isOk,
  type Kit,
  list,
  listPage,
  multiline,
  type PageContext,
  pathOf,
  text,
  words,
} from '../kit.ts';

interface AccountRow {
  handle: string;
  kind: 'user' | 'organization';
  displayName: string;
  visibility: string;
  role: Role | null;
}
interface ProjectRow {
  handle: string;
  name: string;
  description: string;
  sourceLocale: string;
  targetLocales: string[];
  etag: string;
  updatedAt: string;
}

/** The edit form's fields, with their labels: a project as the form shows it. */
const EDIT_FIELDS = ['name', 'description', 'sourceLocale', 'targetLocales'] as const;
type EditValues = Record<(typeof EDIT_FIELDS)[number], string>;
const EDIT_LABELS: EditValues = {
  name: 'Project name',
  description: 'Description',
  sourceLocale: 'Source locale',
  targetLocales: 'Target locales',
};

const editValuesOf = (project: ProjectRow): EditValues => ({
  name: project.name,
  description: project.description,
  sourceLocale: project.sourceLocale,
  targetLocales: project.targetLocales.join(' '),
});

/** The edit form as sent: a text the person left as the form showed it is the stored text (kit.edited). */
function typedEditValues(body: unknown, base: EditValues | undefined): EditValues {
  return {
    name: edited(body, 'name', base?.name),
    description: edited(body, 'description', base?.description),
    sourceLocale: text(body, 'sourceLocale'),
    targetLocales: list(body, 'targetLocales').join(' '),
  };
}

/** The changed fields as updateProject's body: locales typed as a list. */
function projectUpdate(changed: Partial<EditValues>) {
  const { targetLocales, ...rest } = changed;
  return { ...rest, ...(targetLocales === undefined ? {} : { targetLocales: words(targetLocales) }) };
}

const PAGE = { limit: 100 };

export function projectPages(router: Router, kit: Kit, pipeline: Pipeline): void {
  const can = (role: Role | null | undefined, scope: string) => pipeline.allows(role, scope);

  async function accounts(pc: PageContext): Promise<AccountRow[]> {
    // All of them: the person's own account and the organizations they are in.
    const all = await allItems<AccountRow>(pc.call, 'listAccounts');
    return 'items' in all ? all.items : [];
  }

  async function dashboard(
    res: import('express').Response,
    pc: PageContext,
    extra: { status?: number; org?: object; project?: object; notice?: string } = {},
  ) {
    const mine = await accounts(pc);
    const withProjects = await Promise.all(
      mine.map(async (account) => {
        const r = await pc.call('listProjects', { params: { account: account.handle }, query: PAGE });
        const page = isOk(r) ? (r.body as { items: ProjectRow[]; nextCursor?: string | null }) : undefined;
        // The first page only; the account's page goes through the rest a page at a time.
        return { ...account, projects: page?.items ?? [], moreProjects: Boolean(page?.nextCursor) };
      }),
    );
    kit.render(
      res,
      pc,
      'dashboard',
      {
        title: 'Dashboard',
        section: 'dashboard',
        notice: extra.notice,
        accounts: withProjects,
        writable: mine.filter((a) => can(a.role, 'project:write')).map((a) => a.handle),
        org: extra.org ?? { values: { visibility: 'private' }, fields: {}, form: [] },
        project: extra.project ?? { values: {}, fields: {}, form: [] },
      },
      extra.status,
    );
  }

  router.get(
    '/dashboard',
    kit.page(async (req, res, pc) => {
      await dashboard(res, pc, { notice: kit.noticeOf(req, pc) });
    }),
  );

  router.post(
    '/dashboard/organizations',
    ...kit.action(async (req, res, pc) => {
      const values = {
        handle: text(req.body, 'handle'),
        displayName: text(req.body, 'displayName'),
        visibility: text(req.body, 'visibility'),
      };
      const r = await pc.call('createOrganization', { body: values });
      if (isOk(r)) {
        const notice = `Organization @${values.handle} created; you are its admin.`;
        return res.redirect(303, kit.withNotice(pc, pathOf('orgs', values.handle), notice));
      }
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      await dashboard(res, pc, { status: r.status, org: { values, ...formErrors(r) } });
    }),
  );

  router.post(
    '/dashboard/projects',
    ...kit.action(async (req, res, pc) => {
      const account = text(req.body, 'account');
      const values = projectValues(req.body);
      const r = await pc.call('createProject', { params: { account }, body: projectBody(values) });
      if (isOk(r)) {
        const path = pathOf('accounts', account, 'projects', values.handle);
        return res.redirect(303, kit.withNotice(pc, path, `Project ${values.handle} created.`));
      }
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      await dashboard(res, pc, {
        status: r.status,
        project: { values: { ...values, account }, ...formErrors(r) },
      });
    }),
  );

  /** The account's row as the person sees it (role included), or the failed response. */
  async function account(pc: PageContext, handle: string) {
    const r = await pc.call('getAccount', { params: { account: handle } });
    return isOk(r) ? { account: r.body as AccountRow } : { failed: r };
  }

  const accountCrumbs = (handle: string): Crumb[] => [
    { href: '/dashboard', label: 'Dashboard' },
    { href: pathOf('accounts', handle), label: `@${handle}` },
  ];

  router.get(
    '/accounts/:account',
    kit.page(async (req, res, pc) => {
      const found = await account(pc, String(req.params.account));
      if (!found.account) return kit.problemPage(res, pc, found.failed);
      const a = found.account;
      const projects = await listPage<ProjectRow>(
        pc.call,
        'listProjects',
        { params: { account: a.handle } },
        req.query.after,
      );
      if ('failed' in projects) return kit.problemPage(res, pc, projects.failed);
      kit.render(res, pc, 'account', {
        title: a.displayName,
        section: 'dashboard',
        notice: kit.noticeOf(req, pc),
        crumbs: accountCrumbs(a.handle),
        acting: { handle: a.handle, role: a.role },
        account: a,
        projects: projects.items,
        // The list a page at a time: the link to its next page, and back to its start on a later one.
        pages: { projects: { next: projects.next, later: typeof req.query.after === 'string' } },
        can: {
          voice: can(a.role, 'voice:read'),
          glossary: can(a.role, 'glossary:read'),
          models: can(a.role, 'model:read'),
          organization: a.kind === 'organization' && can(a.role, 'organization:read'),
          createProjects: can(a.role, 'project:write'),
        },
      });
    }),
  );

  async function projectPage(
    res: import('express').Response,
    pc: PageContext,
    handle: string,
    projectHandle: string,
    extra: {
      status?: number;
      edit?: EditForm<EditValues>;
      notice?: string;
    } = {},
  ) {
    const found = await account(pc, handle);
    if (!found.account) return kit.problemPage(res, pc, found.failed);
    const r = await pc.call('getProject', { params: { account: handle, project: projectHandle } });
    if (!isOk(r)) return kit.problemPage(res, pc, r);
    const project = r.body as ProjectRow;
    const role = found.account.role;
    kit.render(
      res,
      pc,
      'project',
      {
        title: project.name,
        section: 'dashboard',
        crumbs: [...accountCrumbs(handle), { label: project.name }],
        acting: { handle, role },
        notice: extra.notice,
        account: handle,
        project,
        canEdit: can(role, 'project:write'),
        canDelete: can(role, 'project:delete'),
        // The form carries the revision and the values it shows (edit-in-place.ts).
        edit: editFormView(extra.edit, editValuesOf(project), project.etag),
      },
      extra.status,
    );
  }

  router.get(
    '/accounts/:account/projects/:project',
    kit.page(async (req, res, pc) => {
      await projectPage(res, pc, String(req.params.account), String(req.params.project), {
        notice: kit.noticeOf(req, pc),
      });
    }),
  );

  router.post(
    '/accounts/:account/projects/:project',
    ...kit.action(async (req, res, pc) => {
      const params = { account: String(req.params.account), project: String(req.params.project) };
      const sent = readFormBase<EditValues>(req.body, EDIT_FIELDS);
      const typed = typedEditValues(req.body, sent.base);
      const outcome = await saveInPlace({
        typed,
        sent,
        fields: EDIT_FIELDS,
        read: async () => {
          const r = await pc.call('getProject', { params });
          if (!isOk(r)) return r;
          const project = r.body as ProjectRow;
          return { etag: project.etag, base: editValuesOf(project) };
        },
        save: (changed, ifMatch) =>
          pc.call('updateProject', { params, ifMatch, body: projectUpdate(changed) }),
      });
      const next = afterSave(outcome, {
        noun: 'project',
        labels: EDIT_LABELS,
        formStatuses: [400, 409],
      });
      if ('problem' in next) return kit.problemPage(res, pc, next.problem);
      if ('notice' in next) {
        const here = pathOf('accounts', params.account, 'projects', params.project);
        return res.redirect(303, kit.withNotice(pc, here, next.notice));
      }
      await projectPage(res, pc, params.account, params.project, { status: next.status, edit: next.form });
    }),
  );

  // Deleting asks first, on a page of its own that names the project and wants its handle typed.
  router.get(
    '/accounts/:account/projects/:project/delete',
    kit.page(async (req, res, pc) => {
      await deletePage(res, pc, String(req.params.account), String(req.params.project));
    }),
  );

  async function deletePage(
    res: import('express').Response,
    pc: PageContext,
    handle: string,
    projectHandle: string,
    extra: { status?: number; error?: string; typed?: string; refusedTag?: string } = {},
  ) {
    const r = await pc.call('getProject', { params: { account: handle, project: projectHandle } });
    if (!isOk(r)) return kit.problemPage(res, pc, r);
    const project = r.body as ProjectRow;
    // Refused for the revision the page was opened on: the page now shows the project as it is.
    const error =
      extra.refusedTag === undefined
        ? extra.error
        : extra.refusedTag === ''
          ? 'This form did not say which version of the project it showed: nothing was deleted. Check the project and confirm again.'
          : sameResource(extra.refusedTag, project.etag)
            ? 'Someone changed the project since this page was opened: nothing was deleted. Check it and confirm again.'
            : 'The project under this name is not the one this page showed: it was deleted and another made in its place. Nothing was deleted; check this one and confirm again to delete it.';
    const found = await account(pc, handle);
    kit.render(
      res,
      pc,
      'project-delete',
      {
        title: `Delete ${project.name}`,
        section: 'dashboard',
        crumbs: [
          ...accountCrumbs(handle),
          { href: pathOf('accounts', handle, 'projects', projectHandle), label: project.name },
          { label: 'Delete' },
        ],
        acting: { handle, role: found.account?.role ?? null },
        account: handle,
        project,
        error,
        typed: extra.typed ?? '',
      },
      extra.status,
    );
  }

  router.post(
    '/accounts/:account/projects/:project/delete',
    ...kit.action(async (req, res, pc) => {
      const params = { account: String(req.params.account), project: String(req.params.project) };
      const typed = text(req.body, 'confirm');
      if (typed !== params.project) {
        return deletePage(res, pc, params.account, params.project, {
          status: 400,
          typed,
          error: `Type ${params.project} to confirm.`,
        });
      }
      // Deleted only as the page showed it: a project changed since, or another made under its handle, is
      // shown again to confirm. A page without the revision it showed is too, after the operation has
      // decided who may delete (a reader's forged form is a 403).
      const etag = readFormEtag(req.body);
      const r = await pc.call('deleteProject', { params, ifMatch: etag || NO_REVISION });
      if (r.status === 412) {
        return deletePage(res, pc, params.account, params.project, { status: 412, typed, refusedTag: etag });
      }
      if (!isOk(r)) return kit.problemPage(res, pc, r);
      const notice = `Project ${params.project} deleted.`;
      res.redirect(303, kit.withNotice(pc, pathOf('accounts', params.account), notice));
    }),
  );
}

/** The new-project form: its handle and the fields the edit form has too. */
type ProjectValues = EditValues & { handle: string };

function projectValues(body: unknown): ProjectValues {
  return {
    handle: text(body, 'handle'),
    name: multiline(body, 'name'),
    description: multiline(body, 'description'),
    sourceLocale: text(body, 'sourceLocale'),
    targetLocales: list(body, 'targetLocales').join(' '),
  };
}

/** The new-project form as createProject's body: locales typed as a list. */
function projectBody(values: ProjectValues) {
  return { ...projectUpdate(values), handle: values.handle };
}
