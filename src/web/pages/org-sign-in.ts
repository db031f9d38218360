// An organization's own sign-in, as its admins manage it: the e-mail domains it claims (the DNS TXT record
// to publish, shown once when a domain is added, and whether the domain is verified) and its identity
// provider (the client secret is write-only: the page says whether one is stored, never what it is).
// Every action is an operation of the pipeline (listDomains, addDomain, verifyDomain, removeDomain,
// getIdentityProvider, setIdentityProvider, removeIdentityProvider); members get the explanation only.
import type { Response, Router } from 'express';
import type { OperationResponse, Pipeline } from '../../api/pipeline.ts';
import { asciiDomain } from '../../identity/domains.ts';
import { formErrors, isOk, type Kit, type PageContext, pathOf, text } from '../kit.ts';
import { shownOnce } from '../shown-once.ts';

interface Organization {
  handle: string;
  displayName: string;
  role: 'admin' | 'member' | null;
}

interface Form {
  values: Record<string, unknown>;
  fields: Record<string, string>;
  form: string[];
}

interface Extra {
  status?: number;
  notice?: string;
  domainForm?: Form;
  providerForm?: Form;
  /** The record of a domain just added (its value exists in that answer only). */
  added?: { domain: string; txtRecord: { name: string; value: string } };
}

const ROLE = { admin: 'organization_admin', member: 'organization_member' } as const;
const emptyForm = (values: Record<string, unknown> = {}): Form => ({ values, fields: {}, form: [] });

export function orgSignInPages(
  router: Router,
  kit: Kit,
  pipeline: Pipeline,
  config: { baseUrl: string; cookieKeys: readonly string[] },
): void {
  const { baseUrl } = config;
  // The TXT value exists only in addDomain's answer: the form leads to a page that shows it once
  // (shown-once.ts), so a reload there issues no new value (it posted the form again, and the value shown
  // first, perhaps published already, stopped being the one to publish).
  const added = shownOnce<NonNullable<Extra['added']> & { org: string }>(
    config.cookieKeys,
    'domain-added',
    baseUrl.startsWith('https:'),
  );
  // Where the organization's provider sends people back; the same URL setIdentityProvider reports.
  const callbackUrl = `${baseUrl}/signin/callback/org`;
  const here = (pc: PageContext, handle: string, notice: string) =>
    kit.withNotice(pc, pathOf('orgs', handle, 'sign-in'), notice);

  async function signInPage(res: Response, pc: PageContext, handle: string, extra: Extra = {}) {
    const r = await pc.call('getOrganization', { params: { org: handle } });
    if (!isOk(r)) return kit.problemPage(res, pc, r);
    const org = r.body as Organization;
    const role = org.role ? ROLE[org.role] : 'public_account';
    const admin = pipeline.allows(role, 'organization:admin');
    let domains: unknown[] = [];
    let provider: Record<string, unknown> | null = null;
    if (admin) {
      const listed = await pc.call('listDomains', { params: { org: handle } });
      if (!isOk(listed)) return kit.problemPage(res, pc, listed);
      domains = (listed.body as { items: unknown[] }).items;
      const got = await pc.call('getIdentityProvider', { params: { org: handle } });
      if (isOk(got)) provider = got.body as Record<string, unknown>;
      else if (got.status !== 404) return kit.problemPage(res, pc, got);
    }
    kit.render(
      res,
      pc,
      'org-sign-in',
      {
        title: `Sign-in for @${handle}`,
        section: 'dashboard',
        crumbs: [
          { href: '/dashboard', label: 'Dashboard' },
          { href: pathOf('orgs', handle), label: `@${handle}` },
          { label: 'Sign-in' },
        ],
        acting: { handle, role },
        notice: extra.notice,
        org,
        admin,
        domains,
        provider,
        callbackUrl: (provider?.callbackUrl as string | undefined) ?? callbackUrl,
        added: extra.added,
        domainForm: extra.domainForm ?? emptyForm(),
        // The stored secret is never sent to a page; the form's secret field always starts empty.
        providerForm:
          extra.providerForm ??
          emptyForm({
            issuer: provider?.issuer ?? '',
            clientId: provider?.clientId ?? '',
            enrollRole: provider?.enrollRole ?? '',
            required: provider?.required ?? false,
          }),
      },
      extra.status,
    );
  }

  /** After a one-button action: back to the page with a notice, the reason next to it, or the problem page. */
  function afterward(res: Response, pc: PageContext, r: OperationResponse, handle: string, notice: string) {
    if (isOk(r)) return res.redirect(303, here(pc, handle, notice));
    if (r.status === 400 || r.status === 409) {
      const { fields, form } = formErrors(r);
      return signInPage(res, pc, handle, {
        status: r.status,
        notice: [...form, ...Object.values(fields)].join(' '),
      });
    }
    return kit.problemPage(res, pc, r);
  }

  router.get(
    '/orgs/:org/sign-in',
    kit.page(async (req, res, pc) => {
      await signInPage(res, pc, String(req.params.org), { notice: kit.noticeOf(req, pc) });
    }),
  );

  router.post(
    '/orgs/:org/sign-in/domains',
    ...kit.action(async (req, res, pc) => {
      const org = String(req.params.org);
      // Domain names are case-insensitive; the API takes them in lower case, as DNS answers show them.
      // Written in Unicode (bücher.example) or in capitals, sent in the form the API takes.
      const typed = text(req.body, 'domain');
      const r = await pc.call('addDomain', { params: { org }, body: { domain: asciiDomain(typed.trim()) } });
      if (isOk(r)) {
        const { domain, txtRecord } = r.body as NonNullable<Extra['added']>;
        return added.showAt(res, `${pathOf('orgs', org)}/sign-in/domains/added`, { org, domain, txtRecord });
      }
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      // A refused form shows what was typed, not the form it was sent in (its punycode).
      await signInPage(res, pc, org, {
        status: r.status,
        domainForm: { values: { domain: typed }, ...formErrors(r) },
      });
    }),
  );

  router.get(
    '/orgs/:org/sign-in/domains/added',
    kit.page(async (req, res, pc) => {
      const org = String(req.params.org);
      const shown = await added.take(req, res);
      if (!shown || shown.org !== org) {
        const notice =
          'A TXT value is shown once, right after it is issued, and this one was shown already. If it was not copied, issue a new one with "New TXT record".';
        return res.redirect(303, kit.withNotice(pc, `${pathOf('orgs', org)}/sign-in`, notice));
      }
      await signInPage(res, pc, org, { added: { domain: shown.domain, txtRecord: shown.txtRecord } });
    }),
  );

  router.post(
    '/orgs/:org/sign-in/domains/:domain/verify',
    ...kit.action(async (req, res, pc) => {
      const params = { org: String(req.params.org), domain: String(req.params.domain) };
      const r = await pc.call('verifyDomain', { params });
      afterward(res, pc, r, params.org, `${params.domain} is verified.`);
    }),
  );

  router.post(
    '/orgs/:org/sign-in/domains/:domain/remove',
    ...kit.action(async (req, res, pc) => {
      const params = { org: String(req.params.org), domain: String(req.params.domain) };
      const r = await pc.call('removeDomain', { params });
      afterward(res, pc, r, params.org, `${params.domain} was removed.`);
    }),
  );

  router.post(
    '/orgs/:org/sign-in/provider',
    ...kit.action(async (req, res, pc) => {
      const org = String(req.params.org);
      const secret = text(req.body, 'clientSecret');
      const values = {
        issuer: text(req.body, 'issuer').trim(),
        clientId: text(req.body, 'clientId').trim(),
        enrollRole: text(req.body, 'enrollRole'),
        required: text(req.body, 'required') === 'on',
      };
      const body = {
        issuer: values.issuer,
        clientId: values.clientId,
        // An empty secret field keeps the stored secret.
        ...(secret ? { clientSecret: secret } : {}),
        enrollRole: values.enrollRole === '' ? null : values.enrollRole,
        required: values.required,
      };
      const r = await pc.call('setIdentityProvider', { params: { org }, body });
      if (isOk(r)) return res.redirect(303, here(pc, org, 'Identity provider saved.'));
      if (r.status !== 400) return kit.problemPage(res, pc, r);
      // What was typed comes back, except the secret, which is never written into a page.
      await signInPage(res, pc, org, { status: 400, providerForm: { values, ...formErrors(r) } });
    }),
  );

  router.post(
    '/orgs/:org/sign-in/provider/remove',
    ...kit.action(async (req, res, pc) => {
      const org = String(req.params.org);
      const r = await pc.call('removeIdentityProvider', { params: { org } });
      afterward(res, pc, r, org, 'Identity provider removed.');
    }),
  );
}
