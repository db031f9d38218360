import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { isoTime, type PlainRow } from '../../db/columns.ts';
import { type IProject, Project } from '../../db/entities/index.ts';
import { canonicalLocale, canonicalLocales } from '../../domain/validation.ts';
import { findAccountRow, findAccountRows, findByHandle } from '../account-resources.ts';
import { assertIfMatch, notModified, projectEtag, storedRevision, taggedResponse } from '../etag.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';
import { problems } from '../problem.ts';

/** What a project's representation is made of: its own columns (the entity or a plain row). */
type ProjectFields = Pick<
  IProject,
  | 'id'
  | 'handle'
  | 'name'
  | 'description'
  | 'sourceLocale'
  | 'targetLocales'
  | 'revision'
  | 'createdAt'
  | 'updatedAt'
>;

function serializeProject(
  project: ProjectFields | PlainRow<ProjectFields>,
  accountHandle: string,
): Schemas.Project {
  return {
    id: project.id,
    account: accountHandle,
    handle: project.handle,
    name: project.name,
    description: project.description,
    sourceLocale: project.sourceLocale,
    targetLocales: project.targetLocales,
    etag: projectEtag(project.id, project.revision),
    createdAt: isoTime(project.createdAt),
    updatedAt: isoTime(project.updatedAt),
  };
}

function findProject(op: OperationContext): Promise<IProject> {
  return findByHandle(op, Project, op.params.project!, 'project');
}

/**
 * A project translates from its source locale into the others. The refusal points at the field the request
 * sent: an update changing only the source locale to one of the targets is about `sourceLocale`.
 */
function checkLocales(source: string, targets: string[], pointer = '/body/targetLocales') {
  if (targets.includes(source)) {
    throw problems.badRequest(
      `"${source}" cannot be both the source locale and a target locale; take it out of the target locales or choose another source locale.`,
      pointer,
    );
  }
}

export const projectHandlers = {
  async listProjects(op) {
    const found = await findAccountRows(op, Project);
    return { status: 200, body: found.body((p) => serializeProject(p, op.target!.handle)) };
  },

  async createProject(op) {
    const account = op.target!.account;
    const sourceLocale = canonicalLocale(op.body.sourceLocale, '/body/sourceLocale');
    const targetLocales = canonicalLocales(op.body.targetLocales ?? [], '/body/targetLocales');
    checkLocales(sourceLocale, targetLocales);
    if (await op.em.count(Project, { account: account.id, handle: op.body.handle })) {
      throw problems.conflict(
        `"${account.handle}" already has a project "${op.body.handle}".`,
        '/body/handle',
      );
    }
    const project = op.em.create(Project, {
      account,
      handle: op.body.handle,
      name: op.body.name,
      description: op.body.description ?? '',
      sourceLocale,
      targetLocales,
      revision: 1,
    });
    op.audit('project.create', 'project', project.id, { handle: project.handle });
    await op.em.flush();
    return taggedResponse(201, serializeProject(project, account.handle), {
      Location: `/api/v1/accounts/${account.handle}/projects/${project.handle}`,
    });
  },

  async getProject(op) {
    const project = await findAccountRow(op, Project, op.params.project!, 'project');
    return (
      notModified(op, projectEtag(project.id, project.revision)) ??
      taggedResponse(200, serializeProject(project, op.target!.handle))
    );
  },

  async updateProject(op) {
    // Locked until the update commits (findByHandle), so the revision checked here is the one it replaces.
    const project = await findProject(op);
    // The precondition is decided first: a stale If-Match is a 412 even when the change would be refused
    // for its values too (a form saved on top of a newer revision is then shown that revision). Only a
    // change that is valid and stored already passes a stale one.
    let next: Pick<IProject, 'name' | 'description' | 'sourceLocale' | 'targetLocales'> | undefined;
    let invalid: unknown;
    try {
      next = {
        name: op.body.name ?? project.name,
        description: op.body.description ?? project.description,
        sourceLocale:
          op.body.sourceLocale !== undefined
            ? canonicalLocale(op.body.sourceLocale, '/body/sourceLocale')
            : project.sourceLocale,
        targetLocales:
          op.body.targetLocales !== undefined
            ? canonicalLocales(op.body.targetLocales, '/body/targetLocales')
            : project.targetLocales,
      };
      checkLocales(
        next.sourceLocale,
        next.targetLocales,
        op.body.targetLocales === undefined ? '/body/sourceLocale' : '/body/targetLocales',
      );
    } catch (error) {
      invalid = error;
    }
    const changed = next
      ? (Object.keys(next) as (keyof typeof next)[]).filter(
          (field) => JSON.stringify(next[field]) !== JSON.stringify(project[field]),
        )
      : undefined;
    // A stale If-Match with nothing to change is this update made before (a retry after a lost answer).
    assertIfMatch(
      op,
      projectEtag(project.id, project.revision),
      `project "${project.handle}"`,
      changed?.length === 0,
    );
    if (invalid !== undefined || !next || !changed) throw invalid;
    if (changed.length > 0) {
      op.em.assign(project, next);
      op.audit('project.update', 'project', project.id, { fields: changed });
      await op.em.flush();
    }
    // The database moved the revision if the update changed anything; otherwise it is the one read.
    const revision = changed.length > 0 ? await storedRevision(op, 'projects', project.id) : project.revision;
    return taggedResponse(200, {
      ...serializeProject(project, op.target!.handle),
      etag: projectEtag(project.id, revision),
    });
  },

  async deleteProject(op) {
    const project = await findProject(op);
    // Locked (findByHandle): a delete sent with the etag it read removes that revision or nothing.
    assertIfMatch(op, projectEtag(project.id, project.revision), `project "${project.handle}"`);
    op.audit('project.delete', 'project', project.id, { handle: project.handle });
    op.em.remove(project);
    await op.em.flush();
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
