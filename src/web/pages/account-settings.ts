// Account models (the API key is write-only: a password field that is never filled back, and the page
// shows only whether a key is set) and the person's profile (name and e-mail, and the linked sign-in
// methods, managed on their own page: ./identities.ts; sessions are a page of src/identity).
import type { Response, Router } from 'express';
import type { Pipeline } from '../../api/pipeline.ts';
import type { Role } from '../../authz/policy.ts';
import { edited, formErrors, isOk, type Kit, listPage, type PageContext, text } from '../kit.ts';
import { linkedIdentities, type ProviderChoice } from './identities.ts';

const MODELS = '/settings/models';

export function accountSettingsPages(
  router: Router,
  kit: Kit,
  pipeline: Pipeline,
  providers: ProviderChoice[],
): void {
  const modelsPath = (pc: PageContext, account: string, notice: string) =>
    kit.withNotice(pc, `${MODELS}?account=${encodeURIComponent(account)}`, notice);

  async function modelsPage(
    res: Response,
    pc: PageContext,
    account: string,
    extra: {
      status?: number;
      values?: object;
      fields?: object;
      form?: string[];
      notice?: string;
      /** Where the list starts: the cursor a "Next" link carried. */
      after?: unknown;
    } = {},
  ) {
    const acc = await pc.call('getAccount', { params: { account } });
    if (!isOk(acc)) return kit.problemPage(res, pc, acc);
    const role = (acc.body as { role: Role | null }).role;
    const models = await listPage(pc.call, 'listModels', { params: { account } }, extra.after);
    if ('failed' in models) return kit.problemPage(res, pc, models.failed);
    kit.render(
      res,
      pc,
      'models',
      {
        title: `Models of @${account}`,
        section: 'models',
        crumbs: [
          { href: '/dashboard', label: 'Dashboard' },
          { href: `/accounts/${account}`, label: `@${account}` },
          { label: 'Models' },
        ],
        acting: { handle: account, role },
        notice: extra.notice,
        account,
        models: models.items,
        pages: { models: { next: models.next, later: typeof extra.after === 'string' } },
        canEdit: pipeline.allows(role, 'model:write'),
        values: extra.values ?? {},
        fields: extra.fields ?? {},
        form: extra.form ?? [],
      },
      extra.status,
    );
  }

  router.get(
    MODELS,
    kit.page(async (req, res, pc) => {
      const account = typeof req.query.account === 'string' ? req.query.account : pc.userHandle;
      await modelsPage(res, pc, account, { notice: kit.noticeOf(req, pc), after: req.query.after });
    }),
  );

  router.post(
    MODELS,
    ...kit.action(async (req, res, pc) => {
      const account = text(req.body, 'account');
      // The key is sent on, never kept in `values`: a page that fails does not render it back.
      const values = {
        handle: text(req.body, 'handle'),
        model: text(req.body, 'model'),
        baseUrl: text(req.body, 'baseUrl'),
        isDefault: text(req.body, 'isDefault') === 'on',
      };
      const apiKey = text(req.body, 'apiKey');
      const r = await pc.call('createModel', {
        params: { account },
        body: {
          handle: values.handle,
          model: values.model,
          ...(values.baseUrl ? { baseUrl: values.baseUrl } : {}),
          ...(apiKey ? { apiKey } : {}),
          isDefault: values.isDefault,
        },
      });
      if (isOk(r)) return res.redirect(303, modelsPath(pc, account, `Model ${values.handle} added.`));
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      const errors = formErrors(r);
      if (apiKey && !errors.fields.apiKey)
        errors.fields.apiKey = 'Enter the API key again: it is never shown back.';
      await modelsPage(res, pc, account, { status: r.status, values, ...errors });
    }),
  );

  // Replace or remove the stored key, or make the model the default; the key itself is never shown.
  router.post(
    `${MODELS}/:model`,
    ...kit.action(async (req, res, pc) => {
      const account = text(req.body, 'account');
      const modelHandle = String(req.params.model);
      const apiKey = text(req.body, 'apiKey');
      const removeKey = text(req.body, 'removeKey') === 'on';
      // Both at once cannot both be done: the removal would win, and the key typed would be lost unsaid.
      if (apiKey && removeKey)
        return modelsPage(res, pc, account, {
          status: 400,
          form: [
            `${modelHandle}: type a new API key or remove the stored one, not both. Nothing was changed; a new key is never shown back, so type it again to replace the stored one.`,
          ],
        });
      const body = {
        ...(apiKey ? { apiKey } : {}),
        ...(removeKey ? { apiKey: null } : {}),
        ...(text(req.body, 'isDefault') === 'on' ? { isDefault: true } : {}),
      };
      if (Object.keys(body).length === 0)
        return res.redirect(303, modelsPath(pc, account, 'Nothing to change.'));
      const r = await pc.call('updateModel', { params: { account, modelHandle }, body });
      if (isOk(r)) return res.redirect(303, modelsPath(pc, account, `Model ${modelHandle} saved.`));
      if (r.status !== 400) return kit.problemPage(res, pc, r);
      const { fields, form } = formErrors(r);
      await modelsPage(res, pc, account, {
        status: 400,
        form: [...form, ...Object.values(fields).map((m) => `${modelHandle}: ${m}`)],
      });
    }),
  );

  router.post(
    `${MODELS}/:model/delete`,
    ...kit.action(async (req, res, pc) => {
      const account = text(req.body, 'account');
      const modelHandle = String(req.params.model);
      const r = await pc.call('deleteModel', { params: { account, modelHandle } });
      if (!isOk(r)) return kit.problemPage(res, pc, r);
      res.redirect(303, modelsPath(pc, account, `Model ${modelHandle} deleted.`));
    }),
  );

  async function profilePage(
    res: Response,
    pc: PageContext,
    extra: { status?: number; values?: object; fields?: object; form?: string[]; notice?: string } = {},
  ) {
    const r = await pc.call('getCurrentUser');
    if (!isOk(r)) return kit.problemPage(res, pc, r);
    const user = r.body as { displayName: string; email: string | null };
    const identities = await linkedIdentities(pc, providers);
    if (!Array.isArray(identities)) return kit.problemPage(res, pc, identities);
    kit.render(
      res,
      pc,
      'profile',
      {
        title: 'Profile',
        section: 'profile',
        notice: extra.notice,
        profile: user,
        identities,
        values: extra.values ?? { displayName: user.displayName, email: user.email ?? '' },
        fields: extra.fields ?? {},
        form: extra.form ?? [],
      },
      extra.status,
    );
  }

  router.get(
    '/settings/profile',
    kit.page(async (req, res, pc) => {
      await profilePage(res, pc, { notice: kit.noticeOf(req, pc) });
    }),
  );

  router.post(
    '/settings/profile',
    ...kit.action(async (req, res, pc) => {
      // A name the form gives back as it showed it is kept as stored (kit.edited).
      const shown = await pc.call('getCurrentUser');
      const storedName = isOk(shown) ? (shown.body as { displayName: string }).displayName : undefined;
      const values = {
        displayName: edited(req.body, 'displayName', storedName),
        email: text(req.body, 'email'),
      };
      const r = await pc.call('updateCurrentUser', {
        body: { displayName: values.displayName, email: values.email.trim() === '' ? null : values.email },
      });
      if (isOk(r)) return res.redirect(303, kit.withNotice(pc, '/settings/profile', 'Profile saved.'));
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      await profilePage(res, pc, { status: r.status, values, ...formErrors(r) });
    }),
  );
}
