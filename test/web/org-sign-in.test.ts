import type { Browser, Page, Response as PlaywrightResponse } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OidcUpstream, startOidcUpstream } from '../identity/upstream.ts';
import { sql, startOAuthService, uniqueHandle } from '../oauth/helpers.ts';
import { startTxtServer, type TxtServer } from '../support/dns-server.ts';
import { hasChromium, launchChromium } from '../support/environment.ts';
import { freePort } from '../support/ports.ts';
import type { TestService } from '../support/service.ts';
import { checkPage, confirmAction, DocumentTracker, devSignIn, giveVerifiedEmail } from './page-checks.ts';

let service: TestService;
let browser: Browser;
let idp: OidcUpstream;
let dns: TxtServer;

beforeAll(async () => {
  dns = await startTxtServer();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startOidcUpstream([`${base}/signin/callback/org`]);
  service = await startOAuthService({
    PORT: String(port),
    BASE_URL: base,
    DNS_SERVERS: dns.address,
  });
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await idp?.close();
  await dns?.close();
});

/** Every HTML body a page answered with (each document, each form's answer), to search for the secret. */
const seen: Promise<string>[] = [];
const documents = new DocumentTracker();
// A redirect has no body to read.
const keepBody = (response: PlaywrightResponse) => {
  if (response.status() < 300 || response.status() >= 400) seen.push(response.text().catch(() => ''));
};
const look = (page: Page, name: string) => checkPage(page, documents.last(page), name);
const signIn = (handle: string, next: string) =>
  devSignIn(browser, service, handle, next, documents, keepBody);

const ORG = `(select o.id from organizations o join accounts a on a.id = o.account_id where a.handle = $1)`;
const domainRows = async (org: string) =>
  (await sql(service, `select domain, verified_at from organization_domains where organization_id = ${ORG}`, [
    org,
  ])) as { domain: string; verified_at: Date | null }[];
const providerRows = async (org: string) =>
  (await sql(
    service,
    `select issuer, client_id, client_secret_encrypted is not null as has_secret
       from organization_sign_in_providers where organization_id = ${ORG}`,
    [org],
  )) as { issuer: string; client_id: string; has_secret: boolean }[];

describe.skipIf(!hasChromium)("the organization's sign-in page", () => {
  it('claims and verifies a domain, configures the provider, and offers a member nothing', {
    timeout: 120_000,
  }, async () => {
    const org = uniqueHandle('org');
    const domain = `${org}.example`;
    const { page: admin } = await signIn(uniqueHandle('adm'), '/dashboard');
    await admin.getByLabel('Organization handle').fill(org);
    await admin.getByLabel('Display name').fill('Acme');
    await admin.getByRole('button', { name: 'Create organization' }).click();
    await admin.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    await admin.getByRole('link', { name: 'E-mail domains and identity provider' }).click();
    await admin.waitForURL(`${service.url}/orgs/${org}/sign-in`);
    expect(await admin.locator('h1').textContent()).toContain('Sign-in for Acme');
    expect(await admin.locator('#callback-url').textContent()).toBe(`${service.url}/signin/callback/org`);
    await look(admin, 'org-sign-in');

    // A refused domain: the problem next to the field, what was typed kept, nothing stored.
    await admin.getByLabel('Domain', { exact: true }).fill('gmail.com');
    await admin.getByRole('button', { name: 'Add domain' }).click();
    await admin.locator('#f-domain-error').waitFor();
    expect(await admin.getByLabel('Domain', { exact: true }).inputValue()).toBe('gmail.com');
    expect(await admin.getByLabel('Domain', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await domainRows(org)).toEqual([]);
    await look(admin, 'org-sign-in-error');

    // The domain: its TXT record, shown on the answer to the POST, and "not verified".
    await admin.getByLabel('Domain', { exact: true }).fill(domain);
    await admin.getByRole('button', { name: 'Add domain' }).click();
    await admin.locator('#txt-value').waitFor();
    const name = (await admin.locator('#txt-name').textContent())!;
    const value = (await admin.locator('#txt-value').textContent())!;
    expect(name).toBe(`_l10n-verification.${domain}`);
    expect(value.length).toBeGreaterThan(10);
    const row = admin.locator('tbody tr', { hasText: domain });
    expect(await row.locator('td[data-label="State"]').textContent()).toContain('not verified');
    await look(admin, 'org-sign-in-added');

    // Not published yet: verification fails with the reason and changes nothing.
    await admin.getByRole('button', { name: `Verify ${domain}` }).click();
    // A refusal: its notice is an alert, with the focus.
    await admin.locator('[role="alert"]').first().waitFor();
    expect(documents.last(admin)?.status()).toBe(409);
    expect(await row.locator('td[data-label="State"]').textContent()).toContain('not verified');
    expect((await domainRows(org))[0]!.verified_at).toBeNull();

    // Published: verified.
    dns.records.set(name, value);
    await admin.getByRole('button', { name: `Verify ${domain}` }).click();
    await admin.waitForURL(new RegExp(`/orgs/${org}/sign-in\\?notice=`));
    expect(await admin.getByRole('status').textContent()).toContain(`${domain} is verified.`);
    const state = (await row.locator('td[data-label="State"]').textContent())!;
    expect(state).toContain('verified');
    expect(state).not.toContain('not verified');
    expect(await admin.getByRole('button', { name: `Verify ${domain}` }).count()).toBe(0);
    expect((await domainRows(org))[0]!.verified_at).not.toBeNull();
    await look(admin, 'org-sign-in-verified');

    // An issuer whose discovery fails: the problem next to the field, what was typed kept except the secret.
    await admin.getByLabel('Issuer').fill('http://127.0.0.1:9/nowhere');
    await admin.getByLabel('Client id').fill(idp.clientId);
    await admin.getByLabel('Client secret').fill(idp.clientSecret);
    await admin.getByRole('button', { name: 'Save identity provider' }).click();
    await admin.locator('#f-issuer-error').waitFor();
    expect(documents.last(admin)?.status()).toBe(400);
    expect(await admin.getByLabel('Client id').inputValue()).toBe(idp.clientId);
    expect(await admin.getByLabel('Client secret').inputValue()).toBe('');
    expect(await providerRows(org)).toEqual([]);
    await look(admin, 'org-sign-in-provider-error');

    // The real provider.
    await admin.getByLabel('Issuer').fill(idp.issuer);
    await admin.getByLabel('Client secret').fill(idp.clientSecret);
    await admin.getByLabel('Enroll people at verified domains as').selectOption('member');
    await admin.getByRole('button', { name: 'Save identity provider' }).click();
    await admin.waitForURL(new RegExp(`/orgs/${org}/sign-in\\?notice=`));
    expect(await admin.getByRole('status').textContent()).toContain('Identity provider saved.');
    expect(await admin.locator('#secret-state').textContent()).toBe('set');
    expect(await admin.getByLabel('Client secret').inputValue()).toBe('');
    expect(await providerRows(org)).toEqual([
      { issuer: idp.issuer, client_id: idp.clientId, has_secret: true },
    ]);
    await look(admin, 'org-sign-in-provider');

    // Saving again with the secret field empty keeps the stored secret.
    await admin.getByLabel('Enroll people at verified domains as').selectOption('');
    await admin.getByRole('button', { name: 'Save identity provider' }).click();
    await admin.waitForURL(new RegExp(`/orgs/${org}/sign-in\\?notice=`));
    expect(await admin.locator('#secret-state').textContent()).toBe('set');
    expect((await providerRows(org))[0]!.has_secret).toBe(true);

    // A member (invited and accepted in another browser context) sees no controls and no data.
    await admin.goto(`${service.url}/orgs/${org}`);
    await admin.getByLabel('E-mail').fill('grace@example.com');
    await admin.getByRole('button', { name: 'Create invitation' }).click();
    const link = await admin.locator('#invite-link').inputValue();
    const memberHandle = uniqueHandle('mem');
    const { context: memberContext, page: member } = await signIn(memberHandle, '/dashboard');
    await giveVerifiedEmail(service, memberHandle, 'grace@example.com');
    await member.goto(link);
    await member.getByRole('button', { name: 'Accept the invitation' }).click();
    await member.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    expect(await member.getByRole('link', { name: 'E-mail domains and identity provider' }).count()).toBe(0);
    await member.goto(`${service.url}/orgs/${org}/sign-in`);
    expect(await member.locator('main').textContent()).toContain('Only admins of');
    expect(await member.locator('main form').count()).toBe(0);
    expect(await member.locator('main').textContent()).not.toContain(domain);
    expect(await member.locator('main').textContent()).not.toContain(idp.clientId);
    await look(member, 'org-sign-in-member');

    // Forged admin POSTs with the member's own valid CSRF token: 403, nothing changed.
    await member.goto(`${service.url}/orgs/${org}`);
    const csrf = await member.locator('form[action$="/leave"] input[name="csrf"]').inputValue();
    const forged: [string, Record<string, string>][] = [
      [`/orgs/${org}/sign-in/domains`, { csrf, domain: `other-${domain}` }],
      [`/orgs/${org}/sign-in/domains/${domain}/remove`, { csrf }],
      [`/orgs/${org}/sign-in/domains/${domain}/verify`, { csrf }],
      [
        `/orgs/${org}/sign-in/provider`,
        { csrf, issuer: 'https://evil.example', clientId: 'x', clientSecret: 'y' },
      ],
      [`/orgs/${org}/sign-in/provider/remove`, { csrf }],
    ];
    for (const [path, form] of forged) {
      const response = await memberContext.request.post(`${service.url}${path}`, { form, maxRedirects: 0 });
      expect(response.status(), path).toBe(403);
      expect(await response.text(), path).toContain('Not allowed');
    }
    expect((await domainRows(org)).map((d) => d.domain)).toEqual([domain]);
    expect((await domainRows(org))[0]!.verified_at).not.toBeNull();
    expect(await providerRows(org)).toEqual([
      { issuer: idp.issuer, client_id: idp.clientId, has_secret: true },
    ]);

    // The admin removes the provider and the domain.
    await admin.goto(`${service.url}/orgs/${org}/sign-in`);
    await confirmAction(admin, 'Remove the identity provider');
    await admin.waitForURL(new RegExp(`/orgs/${org}/sign-in\\?notice=`));
    expect(await admin.locator('main').textContent()).toContain('No identity provider configured.');
    await confirmAction(admin, `Remove ${domain}`);
    await admin.waitForURL(new RegExp(`/orgs/${org}/sign-in\\?notice=`));
    expect(await domainRows(org)).toEqual([]);
    expect(await providerRows(org)).toEqual([]);

    // The client secret was never written into any page either person saw.
    const bodies = await Promise.all(seen);
    expect(bodies.length).toBeGreaterThan(15);
    expect(bodies.some((html) => html.includes('Client secret'))).toBe(true);
    for (const html of bodies) expect(html).not.toContain(idp.clientSecret);
  });
});
