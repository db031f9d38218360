// The person's sign-in methods (/settings/identities): the identities linked to their user, listed and
// unlinked through the operation pipeline (listIdentities, unlinkIdentity) like the API, so the "last
// sign-in method" rule and the audit entry are the operation's. Linking another provider is a sign-in
// at that provider, so its links start the flow of src/identity (/signin/<provider>?link=1).
import type { Response, Router } from 'express';
import { isOk, type Kit, type PageContext } from '../kit.ts';

const IDENTITIES = '/settings/identities';

/** An identity as the listIdentities operation returns it. */
interface IdentityItem {
  id: string;
  provider: string;
  organization: string | null;
  email: string | null;
  emailVerified: boolean;
  requiredByOrganization: boolean;
}

export interface ProviderChoice {
  id: string;
  label: string;
}

/** The name a person knows a provider by: the configured label, or the organization's handle. */
function identityLabel(item: IdentityItem, providers: ProviderChoice[]): string {
  if (item.provider === 'organization')
    return item.organization ? `@${item.organization} (organization)` : 'Your organization';
  return providers.find((p) => p.id === item.provider)?.label ?? item.provider;
}

/** The person's identities with their labels, for this page and the profile. */
export async function linkedIdentities(pc: PageContext, providers: ProviderChoice[]) {
  const r = await pc.call('listIdentities');
  if (!isOk(r)) return r;
  const items = (r.body as { items: IdentityItem[] }).items;
  return items.map((i) => ({ ...i, label: identityLabel(i, providers) }));
}

export function identityPages(router: Router, kit: Kit, providers: ProviderChoice[]): void {
  async function identitiesPage(
    res: Response,
    pc: PageContext,
    extra: { status?: number; message?: string; notice?: string } = {},
  ) {
    const identities = await linkedIdentities(pc, providers);
    if (!Array.isArray(identities)) return kit.problemPage(res, pc, identities);
    const linked = new Set(identities.map((i) => i.provider));
    const next = encodeURIComponent(IDENTITIES);
    kit.render(
      res,
      pc,
      'identities',
      {
        title: 'Sign-in methods',
        section: 'profile',
        crumbs: [{ href: '/settings/profile', label: 'Profile' }, { label: 'Sign-in methods' }],
        message: extra.message,
        notice: extra.notice,
        identities,
        linkable: providers
          .filter((p) => !linked.has(p.id))
          .map((p) => ({ label: p.label, href: `/signin/${encodeURIComponent(p.id)}?link=1&next=${next}` })),
      },
      extra.status,
    );
  }

  router.get(
    IDENTITIES,
    kit.page(async (req, res, pc) => {
      await identitiesPage(res, pc, { notice: kit.noticeOf(req, pc) });
    }),
  );

  router.post(
    `${IDENTITIES}/:id/unlink`,
    ...kit.action(async (req, res, pc) => {
      const r = await pc.call('unlinkIdentity', { params: { identity: String(req.params.id) } });
      if (isOk(r)) {
        const notice = 'Sign-in method removed: it no longer signs you in.';
        return res.redirect(303, kit.withNotice(pc, IDENTITIES, notice));
      }
      // The last sign-in method stays: the page says why, next to the list.
      if (r.status === 409)
        return identitiesPage(res, pc, {
          status: 409,
          message: (r.body as { detail?: string }).detail ?? 'Your last sign-in method cannot be removed.',
        });
      kit.problemPage(res, pc, r);
    }),
  );
}
