// The web pages in a real browser (Debian's chromium through playwright-core), as two people use them:
// an admin signs in, creates an organization, invites a second person who accepts in another browser
// context, creates a project, edits the voice twice and compares the versions, fills a glossary (by
// hand and from a 1,000-row CSV, searched, exported, compared), adds a model with an API key that no
// page ever shows, creates and revokes a token, and disconnects an app it connected. Every page visited
// is checked the same way (look()): a Content-Security-Policy without 'unsafe-inline', axe-core with no
// serious or critical violation, and a screenshot at 390 px and at 1280 px under test/web/screenshots
// (git-ignored). The member sees no admin controls, and an admin form the member forges gets a 403 and
// changes nothing. Then, one at a time: a glossary export that a spreadsheet cannot run as formulas and
// that imports back as the same glossary (and no file for an account one cannot see); and what pages
// answer on their own: 404 for an invitation link that matches nothing, a notice only when the service
// wrote it for this session, and the validator's complaints in plain sentences.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  registerPublicClient,
  sql,
  startOAuthService,
  uniqueHandle,
} from '../oauth/helpers.ts';
import { hasChromium, launchChromium } from '../support/environment.ts';
import type { TestService } from '../support/service.ts';
import { checkPage, confirmAction, DocumentTracker, devSignIn, giveVerifiedEmail } from './page-checks.ts';

let service: TestService;
let browser: Browser;
/** An agent's loopback callback, for the app the tour connects and disconnects. */
let listener: Server;
let redirectUri: string;

beforeAll(async () => {
  listener = createServer((_req, res) => res.end('You can close this window.'));
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  redirectUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
  service = await startOAuthService();
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  listener?.close();
  await browser?.close();
  await service?.close();
});

/** Every HTML body a page answered with during the tour, to search for secrets afterwards. */
const seen: string[] = [];
const looked = new Set<string>();
const documents = new DocumentTracker();

/** The checks every page gets (page-checks.ts), after noting that the tour saw it and what it said. */
async function look(page: Page, name: string) {
  const response = documents.last(page);
  expect(response?.status(), name).toBeLessThan(500);
  seen.push(await page.content());
  await checkPage(page, response, name);
  looked.add(name);
}

const signIn = (handle: string, next: string) => devSignIn(browser, service, handle, next, documents);

const ORG_INVITATIONS = `select count(*) as n from invitations where organization_id =
  (select o.id from organizations o join accounts a on a.id = o.account_id where a.handle = $1)`;

const count = async (query: string, params: unknown[]) =>
  Number(((await sql(service, query, params)) as { n: string }[])[0]!.n);

describe.skipIf(!hasChromium)('the web pages', () => {
  it('tours accounts, organizations, members, projects, voice, glossary, models, tokens and apps', {
    timeout: 180_000,
  }, async () => {
    const adminHandle = uniqueHandle('adm');
    const memberHandle = uniqueHandle('mem');
    const org = uniqueHandle('org');
    const { page: admin } = await signIn(adminHandle, '/dashboard');
    expect(await admin.locator('h1').textContent()).toBe('Dashboard');
    expect(await admin.locator('header nav a[aria-current="page"]').textContent()).toBe('Dashboard');
    await look(admin, 'dashboard');

    // A form that fails keeps what was typed and names the problem next to its field.
    await admin.getByLabel('Organization handle').fill('Not A Handle');
    await admin.getByLabel('Display name').fill('Acme <Inc>');
    await admin.getByRole('button', { name: 'Create organization' }).click();
    await admin.locator('#f-org-handle-error').waitFor();
    expect(await admin.getByLabel('Organization handle').inputValue()).toBe('Not A Handle');
    expect(await admin.getByLabel('Organization handle').getAttribute('aria-invalid')).toBe('true');
    expect(await admin.getByLabel('Display name').inputValue()).toBe('Acme <Inc>');
    await look(admin, 'dashboard-error');
    await admin.getByLabel('Organization handle').fill(org);
    await admin.getByRole('button', { name: 'Create organization' }).click();
    await admin.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    expect(await admin.locator('h1').textContent()).toContain('Acme <Inc>');
    expect(await admin.locator('.acting').textContent()).toContain(`@${org}`);

    // Invite the second person; the link is shown once.
    await admin.getByLabel('E-mail').fill('grace@example.com');
    await admin.getByRole('button', { name: 'Create invitation' }).click();
    await admin.locator('#invite-link').waitFor();
    const link = await admin.locator('#invite-link').inputValue();
    expect(link).toMatch(/\/invitations\/answer\?token=/);
    await look(admin, 'invitation-created');
    // The link's page is one to read, not a form's answer: reloading it invites nobody again and shows the
    // link no more (it posted the form again, and said the address was already invited).
    await admin.reload();
    await admin.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    expect(await admin.getByRole('status').textContent()).toContain('is shown once');
    expect(await count(ORG_INVITATIONS, [org])).toBe(1);
    expect(
      await admin
        .locator('details.confirm > summary', { hasText: 'Revoke the invitation of grace@example.com' })
        .count(),
    ).toBe(1);
    await look(admin, 'organization-admin');

    // The member accepts in another browser context (signing in on the way).
    const { context: memberContext, page: member } = await signIn(memberHandle, '/dashboard');
    await giveVerifiedEmail(service, memberHandle, 'grace@example.com');
    await member.goto(link);
    await look(member, 'invitation-accept');
    await member.getByRole('button', { name: 'Accept the invitation' }).click();
    await member.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    expect(await member.getByRole('status').textContent()).toContain(`Welcome to @${org}`);
    expect(await member.locator('tbody').first().textContent()).toContain(`@${memberHandle}`);

    // A member sees no admin controls …
    expect(await member.getByRole('button', { name: 'Create invitation' }).count()).toBe(0);
    expect(await member.locator('details.confirm > summary', { hasText: /^Remove / }).count()).toBe(0);
    // … but may leave.
    expect(await member.locator('details.confirm > summary', { hasText: `Leave @${org}` }).count()).toBe(1);
    expect(await member.getByRole('button', { name: 'Save profile' }).count()).toBe(0);
    expect(await member.locator('main').textContent()).toContain('Only admins change roles');
    await look(member, 'organization-member');
    // … and a forged admin POST, with the member's own valid CSRF token, gets 403 and changes nothing.
    const memberCsrf = await member.locator('form[action$="/leave"] input[name="csrf"]').inputValue();
    const invitationsBefore = await count(ORG_INVITATIONS, [org]);
    expect(invitationsBefore).toBe(1);
    const forgedInvite = await memberContext.request.post(`${service.url}/orgs/${org}/invitations`, {
      form: { csrf: memberCsrf, email: 'mallory@example.com', role: 'admin' },
      maxRedirects: 0,
    });
    expect(forgedInvite.status()).toBe(403);
    const noCsrf = await memberContext.request.post(`${service.url}/orgs/${org}/invitations`, {
      form: { email: 'mallory@example.com', role: 'admin' },
      maxRedirects: 0,
    });
    expect(noCsrf.status()).toBe(403);
    expect(noCsrf.headers()['content-security-policy']).toContain("default-src 'none'");
    expect(await forgedInvite.text()).toContain('Not allowed');
    const forgedProfile = await memberContext.request.post(`${service.url}/orgs/${org}`, {
      form: { csrf: memberCsrf, displayName: 'Taken over', visibility: 'public' },
      maxRedirects: 0,
    });
    expect(forgedProfile.status()).toBe(403);
    const forgedRole = await memberContext.request.post(
      `${service.url}/orgs/${org}/members/${memberHandle}/role`,
      {
        form: { csrf: memberCsrf, role: 'admin' },
        maxRedirects: 0,
      },
    );
    expect(forgedRole.status()).toBe(403);
    expect(await count(ORG_INVITATIONS, [org])).toBe(invitationsBefore);
    expect(
      await sql(service, 'select display_name, visibility from accounts where handle = $1', [org]),
    ).toEqual([{ display_name: 'Acme <Inc>', visibility: 'private' }]);
    expect(
      await sql(
        service,
        `select m.role from memberships m join organizations o on o.id = m.organization_id
          join accounts a on a.id = o.account_id join accounts u on u.user_id = m.user_id
          where a.handle = $1 and u.handle = $2`,
        [org, memberHandle],
      ),
    ).toEqual([{ role: 'member' }]);

    // A project in the organization, from the dashboard; a bad locale is named next to its field.
    await admin.goto(`${service.url}/dashboard`);
    await admin.getByLabel('Account', { exact: true }).selectOption(org);
    await admin.getByLabel('Handle', { exact: true }).fill('website');
    await admin.getByLabel('Project name').fill('Website');
    await admin.getByLabel('Source locale').fill('en');
    await admin.getByLabel('Target locales').fill('de, not a locale');
    await admin.getByRole('button', { name: 'Create project' }).click();
    await admin.locator('#f-project-targets-error').waitFor();
    expect(await admin.getByLabel('Target locales').inputValue()).toBe('de, not a locale');
    await admin.getByLabel('Target locales').fill('de, fr');
    await admin.getByRole('button', { name: 'Create project' }).click();
    await admin.waitForURL(new RegExp(`/accounts/${org}/projects/website\\?notice=`));
    expect(await admin.locator('dl.facts').textContent()).toContain('de, fr');
    await look(admin, 'project');
    await admin.getByLabel('Description').fill('The marketing site');
    await admin.getByRole('button', { name: 'Save project' }).click();
    await admin.getByRole('status').waitFor();
    expect(await admin.locator('dl.facts').textContent()).toContain('The marketing site');
    // A member's forged delete, with the page's revision or without one (as from an older page), is a 403,
    // not a page asking to confirm again.
    const projectTag = await admin.locator('input[name="etag"]').first().inputValue();
    for (const etag of [projectTag, undefined]) {
      const forgedDelete = await memberContext.request.post(
        `${service.url}/accounts/${org}/projects/website/delete`,
        { form: { csrf: memberCsrf, confirm: 'website', ...(etag && { etag }) }, maxRedirects: 0 },
      );
      expect(forgedDelete.status()).toBe(403);
    }
    expect(
      await sql(
        service,
        `select count(*)::int as n from projects p join accounts a on a.id = p.account_id
          where a.handle = $1 and p.handle = 'website'`,
        [org],
      ),
    ).toEqual([{ n: 1 }]);
    await admin.goto(`${service.url}/accounts/${org}`);
    await look(admin, 'account');

    // The voice, twice, then the history and a diff of the two versions.
    await admin.goto(`${service.url}/accounts/${org}/voice`);
    await look(admin, 'voice-empty');
    await admin.getByLabel('Tone').fill('Friendly and direct');
    await admin.getByLabel('Formality').selectOption('informal');
    await admin.getByLabel('Guidelines (Markdown)').fill('Use short sentences.');
    await admin.getByLabel('Target countries').fill('DE AT');
    await admin.getByLabel('Change note').fill('First voice');
    await admin.getByRole('button', { name: 'Save as a new version' }).click();
    await admin.getByText('Saved as version 1.').waitFor();
    await admin.getByLabel('Guidelines (Markdown)').fill('Use short sentences. Say you, never one.');
    await admin.getByLabel('Target countries').fill('DE AT CH');
    await admin.getByLabel('Locale overrides (JSON)').fill('{"de-CH": {"formality": "formal"}}');
    await admin.getByLabel('Change note').fill('Switzerland is formal');
    await admin.getByRole('button', { name: 'Save as a new version' }).click();
    await admin.getByText('Saved as version 2.').waitFor();
    await look(admin, 'voice');
    await admin.getByRole('link', { name: 'History and diffs' }).click();
    expect(await admin.locator('tbody').textContent()).toContain('Switzerland is formal');
    await look(admin, 'voice-history');
    await admin.getByRole('button', { name: 'Show the differences' }).click();
    await admin.waitForURL(/\/voice\/diff\?from=1&to=2/);
    // What is underlined, without the words a screen reader hears around it ("[added: …]").
    const underlined = await admin.locator('ins').evaluateAll((all) =>
      all.map((ins) =>
        [...ins.childNodes]
          .filter((node) => !(node instanceof Element && node.classList.contains('visually-hidden')))
          .map((node) => node.textContent)
          .join('')
          .trim(),
      ),
    );
    expect(underlined).toEqual(expect.arrayContaining(['Say you, never one.', 'CH']));
    expect(await admin.locator('ins').first().textContent()).toMatch(/^\[added: /);
    expect(await admin.locator('main').textContent()).toContain('Tone (unchanged)');
    await look(admin, 'voice-diff');
    // The member reads the voice but is not offered the editor.
    await member.goto(`${service.url}/accounts/${org}/voice`);
    expect(await member.getByRole('button', { name: 'Save as a new version' }).count()).toBe(0);
    expect(await member.locator('main').textContent()).toContain('not change it');
    await look(member, 'voice-member');

    // The glossary: three entries by hand (one with a bad translation locale first), a 1,000-row CSV
    // import, a search, an export that matches the import, the history and a diff.
    await admin.goto(`${service.url}/accounts/${org}/glossary`);
    await look(admin, 'glossary-empty');
    const addEntry = async (
      term: string,
      translations: string,
      flags: ('Do not translate' | 'Forbidden in translations')[] = [],
    ) => {
      await admin.getByLabel('Term', { exact: true }).fill(term);
      await admin.getByLabel('Translations', { exact: true }).fill(translations);
      for (const flag of flags) await admin.getByLabel(flag).check();
      await admin.getByRole('button', { name: 'Add entry' }).click();
    };
    await addEntry('workspace', 'de = Arbeitsbereich\nnot a locale = x');
    await admin.locator('#f-entry-translations-error').waitFor();
    expect(await admin.getByLabel('Translations', { exact: true }).inputValue()).toContain(
      'not a locale = x',
    );
    await look(admin, 'glossary-error');
    await admin
      .getByLabel('Translations', { exact: true })
      .fill('de = Arbeitsbereich\nfr = espace de travail');
    await admin.getByRole('button', { name: 'Add entry' }).click();
    await admin.getByText('Saved as version 1.').waitFor();
    await addEntry('Acme Cloud', '', ['Do not translate']);
    await admin.getByText('Saved as version 2.').waitFor();
    await addEntry('master', '', ['Forbidden in translations']);
    await admin.getByText('Saved as version 3.').waitFor();
    expect(await admin.locator('tbody th').allTextContents()).toEqual(['workspace', 'Acme Cloud', 'master']);

    const imported = Array.from({ length: 1000 }, (_, i) => ({
      term: `term ${String(i).padStart(4, '0')}`,
      definition: i % 7 === 0 ? `a "quoted", comma definition ${i}` : `definition ${i}`,
      caseSensitive: String(i % 5 === 0),
      doNotTranslate: String(i % 10 === 3),
      forbidden: 'false',
      de: `Begriff ${i}`,
      fr: i % 2 === 0 ? `terme ${i}` : '',
    }));
    const csv = stringify(imported, { header: true });
    await admin
      .locator('#f-import-file')
      .setInputFiles({ name: 'terms.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await admin.getByLabel('Change note for the import').fill('Terms from the style guide');
    await admin.getByRole('button', { name: 'Import' }).click();
    await admin.getByText('Saved as version 4.').waitFor();
    expect(await admin.getByRole('status').last().textContent()).toContain('1003 of 1003 entries match');
    // An upload the parser refuses (too large, not well-formed multipart, two files, a file under another
    // field name) gets the pages' HTML error page saying why, with a way back to the glossary; the import
    // does not run, so the glossary stays at version 4 (checked after the reload below).
    const importCsrf = await admin.locator('form[enctype] input[name="csrf"]').inputValue();
    const cookie = (await admin.context().cookies(service.url)).map((c) => `${c.name}=${c.value}`).join('; ');
    const postImport = async (body: FormData | string, contentType?: string) => {
      const response = await fetch(`${service.url}/accounts/${org}/glossary/import`, {
        method: 'POST',
        headers: { cookie, accept: 'text/html', ...(contentType ? { 'content-type': contentType } : {}) },
        body,
        redirect: 'manual',
      });
      return { response, page: await response.text() };
    };
    const importForm = (...files: [field: string, file: File][]) => {
      const form = new FormData();
      form.append('csrf', importCsrf);
      for (const [field, file] of files) form.append(field, file);
      return form;
    };
    const csvFile = (content: string) => new File([content], 'terms.csv', { type: 'text/csv' });
    const lost = csvFile('term,definition\nlost term,never imported\n');
    const malformed = [
      '--cut',
      'Content-Disposition: form-data; name="csrf"',
      '',
      importCsrf,
      '--cut',
      'Content-Disposition: form-data; name="file"; filename="terms.csv"',
      'Content-Type: text/csv',
      '',
      'term,definition',
      'lost term,never imported',
    ].join('\r\n'); // no closing boundary: the body ends inside the file
    for (const [request, status, reason] of [
      [() => postImport(importForm(['csv', lost])), 400, 'the import reads it from the field'],
      [() => postImport(importForm(['file', lost], ['file', lost])), 400, 'more than one file'],
      [
        () => postImport(malformed, 'multipart/form-data; boundary=cut'),
        400,
        'not a well-formed multipart form',
      ],
      [() => postImport(importForm(['file', csvFile('a'.repeat(9 * 1024 * 1024))])), 413, 'larger than 8 MB'],
    ] as const) {
      const { response, page } = await request();
      expect(response.status, reason).toBe(status);
      expect(response.headers.get('content-type'), reason).toMatch(/^text\/html/);
      expect(response.headers.get('content-security-policy'), reason).toContain("default-src 'none'");
      expect(page, reason).toMatch(/<h1>Upload (not readable|too large)<\/h1>/);
      expect(page, reason).toContain(reason);
      expect(page, reason).toContain('Nothing was imported.');
      expect(page, reason).toContain(`<a href="/accounts/${org}/glossary">Back to the glossary</a>`);
    }
    await admin.reload();
    expect(await admin.locator('main').textContent()).toContain('Version 4 · 1003 entries');
    await admin.getByLabel('Term or definition').fill('term 042');
    await admin.getByRole('button', { name: 'Search' }).click();
    await admin.waitForURL(/q=term\+042/);
    expect(await admin.locator('tbody th').allTextContents()).toEqual(
      Array.from({ length: 10 }, (_, i) => `term 042${i}`),
    );
    await admin.getByLabel('Only').selectOption('doNotTranslate');
    await admin.getByRole('button', { name: 'Search' }).click();
    await admin.waitForURL(/flag=doNotTranslate/);
    expect(await admin.locator('tbody th').allTextContents()).toEqual(['term 0423']);
    await look(admin, 'glossary-search');

    const exported = await admin.context().request.get(`${service.url}/accounts/${org}/glossary.csv`);
    expect(exported.headers()['content-type']).toContain('text/csv');
    const rows = parse(await exported.text(), { columns: true }) as Record<string, string>[];
    expect(rows).toHaveLength(1003);
    expect(rows.slice(0, 3).map((r) => r.term)).toEqual(['workspace', 'Acme Cloud', 'master']);
    expect(rows.slice(3)).toEqual(imported);

    await admin.goto(`${service.url}/accounts/${org}/glossary/history`);
    expect(await admin.locator('tbody tr').first().textContent()).toContain('Terms from the style guide');
    await look(admin, 'glossary-history');
    await admin.getByLabel('Compare version', { exact: true }).selectOption('2');
    await admin.getByLabel('with version', { exact: true }).selectOption('3');
    await admin.getByRole('button', { name: 'Show the differences' }).click();
    await admin.waitForURL(/\/glossary\/diff\?from=2&to=3/);
    expect(await admin.locator('tbody th').allTextContents()).toEqual(['master']);
    expect(await admin.locator('tbody').textContent()).toContain('added');
    await look(admin, 'glossary-diff');
    // A file as large as the export of a glossary at the API's limits imports (uploads stopped at 2 MB).
    const big = stringify(
      Array.from({ length: 3900 }, (_, i) => ({ term: `big ${i}`, definition: `${'d'.repeat(560)} ${i}` })),
      { header: true },
    );
    expect(Buffer.byteLength(big)).toBeGreaterThan(2 * 1024 * 1024);
    await admin.goto(`${service.url}/accounts/${org}/glossary`);
    const withEtag = importForm(['file', csvFile(big)]);
    withEtag.append('etag', await admin.locator('form[enctype] input[name="etag"]').inputValue());
    const bigImport = await postImport(withEtag);
    expect(bigImport.response.status).toBe(303);
    await admin.goto(`${service.url}/accounts/${org}/glossary`);
    expect(await admin.locator('main').textContent()).toContain('Version 5 · 4903 entries');
    // Glossary settings, and the member's read-only view.
    await admin.goto(`${service.url}/accounts/${org}/glossary?q=workspace`);
    await admin.getByLabel('Enforcement').selectOption('strict');
    await admin.getByRole('button', { name: 'Save settings' }).click();
    await admin.getByText('Glossary settings saved.').waitFor();
    await look(admin, 'glossary');
    await member.goto(`${service.url}/accounts/${org}/glossary?q=workspace`);
    expect(await member.getByRole('button', { name: 'Add entry' }).count()).toBe(0);
    expect(await member.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    expect(await member.locator('main').textContent()).toContain('Enforcement: strict');
    await look(member, 'glossary-member');
    // What the member may not see answers like something that does not exist.
    const hidden = await member.goto(`${service.url}/accounts/${adminHandle}/voice`);
    expect(hidden?.status()).toBe(404);
    expect(await member.locator('h1').textContent()).toBe('Not found');
    await look(member, 'not-found');
    expect((await member.goto(`${service.url}/accounts/${adminHandle}/glossary`))?.status()).toBe(404);

    // A model with an API key: the page says the key is set, and no page ever contains it.
    const apiKey = 'sk-tour-secret-9f8e7d6c5b4a';
    await admin.goto(`${service.url}/settings/models?account=${org}`);
    await admin.getByLabel('Handle', { exact: true }).fill('gpt');
    await admin.getByLabel('Provider and model').fill('openai:gpt-4o');
    await admin.getByLabel('API key (optional)').fill(apiKey);
    await admin.getByRole('button', { name: 'Add model' }).click();
    await admin.getByText('Model gpt added.').waitFor();
    expect(await admin.locator('tbody td').nth(3).textContent()).toBe('set');
    await look(admin, 'models');
    // A new key replaces the old one, write-only as well; then the key is removed.
    const newKey = 'sk-tour-replacement-1a2b3c4d';
    await admin.getByLabel('New API key for gpt').fill(newKey);
    await admin.getByLabel('Make it the default').check();
    await admin.getByRole('button', { name: 'Save gpt' }).click();
    await admin.getByText('Model gpt saved.').waitFor();
    expect(await admin.locator('tbody td').nth(4).textContent()).toBe('yes');
    seen.push(await admin.content());
    expect(await admin.content()).not.toContain(newKey);
    await admin.getByLabel('Remove the stored key').check();
    await admin.getByRole('button', { name: 'Save gpt' }).click();
    await admin.getByText('Model gpt saved.').waitFor();
    expect(await admin.locator('tbody td').nth(3).textContent()).toBe('not set');
    await member.goto(`${service.url}/settings/models?account=${org}`);
    expect(await member.getByRole('button', { name: 'Add model' }).count()).toBe(0);
    await look(member, 'models-member');

    // An account token, created and revoked.
    await admin.goto(`${service.url}/settings/tokens`);
    await admin.getByLabel('Name', { exact: true }).fill('tour');
    await admin.getByLabel('Read projects').check();
    await admin.getByRole('button', { name: 'Create token' }).click();
    await admin.locator('#token-secret').waitFor();
    await look(admin, 'token-created');
    await admin.getByRole('link', { name: 'Back to your tokens' }).click();
    await confirmAction(admin, 'Revoke tour');
    await expect
      .poll(() => admin.getByRole('heading', { level: 3, name: /tour/ }).textContent())
      .toContain('revoked');
    await look(admin, 'tokens');

    // An app connected through OAuth (consent in the same session), then disconnected.
    const { client } = await registerPublicClient(service, {
      client_name: 'Tour <Agent>',
      redirect_uris: [redirectUri],
    });
    const authorize = await authorizationRequest(service, client, redirectUri, {
      state: 'tour',
      scope: 'project:read',
    });
    await admin.goto(authorize.url);
    await admin.getByRole('button', { name: 'Approve' }).click();
    await admin.waitForURL(/\/callback\?/);
    await admin.goto(`${service.url}/settings/apps`);
    expect(await admin.getByRole('heading', { level: 2 }).allTextContents()).toEqual(['Tour <Agent>']);
    await look(admin, 'apps');
    await confirmAction(admin, 'Disconnect Tour <Agent>');
    await admin.getByText('No apps are connected to your account.').waitFor();
    await look(admin, 'apps-none');
    await admin.goto(`${service.url}/settings/profile`);
    await admin.getByLabel('Name').fill('x'.repeat(101));
    await admin.getByRole('button', { name: 'Save profile' }).click();
    await admin.locator('#f-displayName-error').waitFor();
    expect(await admin.getByLabel('Name').inputValue()).toBe('x'.repeat(101));
    await look(admin, 'profile-error');
    await admin.getByLabel('Name').fill('Ada Admin');
    await admin.getByLabel('E-mail').fill('ada@example.com');
    await admin.getByRole('button', { name: 'Save profile' }).click();
    await admin.getByText('Profile saved.').waitFor();
    await look(admin, 'profile');
    // Sign-in methods: the development sign-in links no provider, so the page says so.
    await admin.getByRole('link', { name: 'Manage sign-in methods' }).click();
    await admin.getByRole('heading', { level: 1, name: 'Sign-in methods' }).waitFor();
    await admin.getByText('No provider is linked to your account yet.').waitFor();
    await look(admin, 'identities');

    // Deleting a project asks for its handle first.
    await admin.goto(`${service.url}/accounts/${org}/projects/website`);
    await admin.getByRole('link', { name: 'Delete this project…' }).click();
    await look(admin, 'project-delete');
    await admin.getByLabel(/Type the project handle/).fill('web');
    await admin.getByRole('button', { name: 'Delete Website' }).click();
    await admin.locator('#f-confirm-error').waitFor();
    expect(await count('select count(*) as n from projects where handle = $1', ['website'])).toBe(1);
    await admin.getByLabel(/Type the project handle/).fill('website');
    await admin.getByRole('button', { name: 'Delete Website' }).click();
    await admin.waitForURL(new RegExp(`/accounts/${org}\\?notice=`));
    expect(await admin.getByRole('status').textContent()).toContain('Project website deleted.');
    expect(await admin.locator('main').textContent()).toContain('No projects yet');

    // The key never reached a page, and every change above was made by the web door of the pipeline.
    for (const html of seen) expect(html).not.toContain(apiKey);
    const doors = (await sql(
      service,
      `select distinct details->>'door' as door from audit_events
        where actor_user_id = (select user_id from accounts where handle = $1)`,
      [adminHandle],
    )) as { door: string }[];
    expect(doors).toEqual([{ door: 'web' }]);
    expect(looked.size).toBeGreaterThanOrEqual(20);
  });

  /** The entries of an account's current glossary version, as stored. */
  const storedGlossary = (handle: string) =>
    sql(
      service,
      `select e.term, e.definition, e.case_sensitive, e.do_not_translate, e.forbidden, e.translations
         from glossary_entries e join glossary_versions v on v.id = e.glossary_version_id
         join accounts a on a.id = v.account_id
        where a.handle = $1
          and v.version = (select max(version) from glossary_versions where account_id = a.id)
        order by e.position`,
      [handle],
    );

  it('exports a glossary no spreadsheet runs as formulas, imports it back unchanged, and hides what one cannot see', {
    timeout: 120_000,
  }, async () => {
    const owner = uniqueHandle('csv');
    const org = uniqueHandle('csvorg');
    const { context, page } = await signIn(owner, '/dashboard');
    // Cells a spreadsheet would evaluate (= + - @ and a leading tab), cells that already start with quotes
    // (one must come back with exactly its own quotes), and plain ones that stay as they are.
    const original = [
      {
        term: '=HYPERLINK("http://evil.example","x")',
        definition: '@SUM(A1:A9)',
        translations: { de: '=1+1' },
      },
      { term: '+1', definition: "''+two quotes first", translations: {} },
      { term: '-ish', definition: '\tindented with a tab', translations: { fr: '-moins' } },
      { term: '@home', definition: 'at home', translations: {} },
      { term: "'=already quoted", definition: "it's plain text", translations: { de: "'apostrophe" } },
      { term: 'plain', definition: 'nothing to quote', translations: { de: 'schlicht' } },
    ];
    await page.goto(`${service.url}/accounts/${owner}/glossary`);
    for (const [i, entry] of original.entries()) {
      await page.getByLabel('Term', { exact: true }).fill(entry.term);
      await page.getByLabel('Definition', { exact: true }).fill(entry.definition);
      await page.getByLabel('Translations', { exact: true }).fill(
        Object.entries(entry.translations)
          .map(([locale, text]) => `${locale} = ${text}`)
          .join('\n'),
      );
      await page.getByRole('button', { name: 'Add entry' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Saved as version ${i + 1}.` })
        .waitFor();
    }
    const asStored = original.map((e) => ({
      ...e,
      case_sensitive: false,
      do_not_translate: false,
      forbidden: false,
    }));
    expect(await storedGlossary(owner)).toEqual(asStored);

    // The export: every cell that starts (after any quotes) with a formula character gets one more '.
    const exported = await context.request.get(`${service.url}/accounts/${owner}/glossary.csv`);
    expect(exported.status()).toBe(200);
    const csv = await exported.text();
    const flags = { caseSensitive: 'false', doNotTranslate: 'false', forbidden: 'false' };
    expect(parse(csv, { columns: true })).toEqual([
      {
        term: `'=HYPERLINK("http://evil.example","x")`,
        definition: "'@SUM(A1:A9)",
        ...flags,
        de: "'=1+1",
        fr: '',
      },
      { term: "'+1", definition: "'''+two quotes first", ...flags, de: '', fr: '' },
      { term: "'-ish", definition: "'\tindented with a tab", ...flags, de: '', fr: "'-moins" },
      { term: "'@home", definition: 'at home', ...flags, de: '', fr: '' },
      { term: "''=already quoted", definition: "it's plain text", ...flags, de: "'apostrophe", fr: '' },
      { term: 'plain', definition: 'nothing to quote', ...flags, de: 'schlicht', fr: '' },
    ]);
    for (const cell of (parse(csv) as string[][]).flat()) expect(cell).not.toMatch(/^[=+\-@\t\r]/);

    // An account the caller cannot see, or that does not exist, has no export (the page's 404, not an
    // empty file); an account with nothing saved yet exports the header row.
    await page.goto(`${service.url}/dashboard`);
    await page.getByLabel('Organization handle').fill(org);
    await page.getByLabel('Display name').fill('Private CSV');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    const reader = uniqueHandle('csv');
    const { context: readerContext, page: readerPage } = await signIn(reader, '/dashboard');
    for (const hidden of [owner, org, uniqueHandle('none')]) {
      const answer = await readerContext.request.get(`${service.url}/accounts/${hidden}/glossary.csv`);
      expect(answer.status(), hidden).toBe(404);
      expect(answer.headers()['content-type'], hidden).toMatch(/^text\/html/);
      expect(await answer.text(), hidden).toContain('<h1>Not found</h1>');
    }
    const empty = await readerContext.request.get(`${service.url}/accounts/${reader}/glossary.csv`);
    expect(empty.status()).toBe(200);
    expect(await empty.text()).toBe('term,definition,caseSensitive,doNotTranslate,forbidden\n');

    // The export, imported by the page into another account, is the same glossary, cell for cell.
    await readerPage.goto(`${service.url}/accounts/${reader}/glossary`);
    await readerPage
      .locator('#f-import-file')
      .setInputFiles({ name: 'export.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await readerPage.getByRole('button', { name: 'Import' }).click();
    await readerPage.getByRole('status').filter({ hasText: 'Saved as version 1.' }).waitFor();
    expect(await storedGlossary(reader)).toEqual(asStored);
    const again = await readerContext.request.get(`${service.url}/accounts/${reader}/glossary.csv`);
    expect(await again.text()).toBe(csv);
    await context.close();
    await readerContext.close();
  });

  it("gives back a textarea's line breaks as they were: LF, not CRLF, and a leading one too", {
    timeout: 120_000,
  }, async () => {
    const owner = uniqueHandle('lbr');
    const { context, page } = await signIn(owner, '/dashboard');
    // A definition with LF line breaks, one of them first, as the API or a CSV import saves it.
    const definition = '\nIndented list:\n  - one\n  - two';
    await page.goto(`${service.url}/accounts/${owner}/glossary`);
    const csv = stringify([
      ['term', 'definition', 'caseSensitive', 'doNotTranslate', 'forbidden'],
      ['workspace', definition, 'false', 'false', 'false'],
    ]);
    await page
      .locator('#f-import-file')
      .setInputFiles({ name: 'terms.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Import' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 1.' }).waitFor();
    // Edited only in its change note: nothing changed, so no version is saved.
    await page.goto(`${service.url}/accounts/${owner}/glossary?edit=workspace#entry`);
    expect(await page.getByLabel('Definition', { exact: true }).inputValue()).toBe(definition);
    await page.getByLabel('Change note', { exact: true }).fill('Only a note');
    await page.getByRole('button', { name: 'Save entry' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: '"workspace" is unchanged: no version was saved.' })
      .waitFor();
    // Edited in a flag: the definition is what it was, and the diff names the flag alone.
    await page.goto(`${service.url}/accounts/${owner}/glossary?edit=workspace#entry`);
    await page.getByLabel('Do not translate').check();
    await page.getByRole('button', { name: 'Save entry' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 2.' }).waitFor();
    expect((await storedGlossary(owner))[0]).toMatchObject({ definition, do_not_translate: true });

    // The voice's guidelines, typed with line breaks, are stored with LF and edited back unchanged.
    const guidelines = '\n# Rules\n\n- one\n- two';
    await page.goto(`${service.url}/accounts/${owner}/voice`);
    await page.getByLabel('Guidelines (Markdown)').fill(guidelines);
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 1.' }).waitFor();
    expect(await page.getByLabel('Guidelines (Markdown)').inputValue()).toBe(guidelines);
    const stored = await sql(
      service,
      `select v.guidelines from voice_versions v join accounts a on a.id = v.account_id where a.handle = $1`,
      [owner],
    );
    expect(stored).toEqual([{ guidelines }]);
    await context.close();
  });

  it('answers a dead invitation link with 404, shows only notices it wrote, and words validator problems plainly', {
    timeout: 120_000,
  }, async () => {
    const handle = uniqueHandle('ntc');
    const org = uniqueHandle('ntcorg');
    const { context, page } = await signIn(handle, '/dashboard');

    // No invitation matches: the page says so, with the status that says so.
    const dead = await page.goto(`${service.url}/invitations/answer?token=bogus`);
    expect(dead?.status()).toBe(404);
    expect(await page.locator('main').textContent()).toContain('No invitation matches this link');

    // Somewhere to look at every page that shows notices: an organization and a project.
    await page.goto(`${service.url}/dashboard`);
    await page.getByLabel('Organization handle').fill(org);
    await page.getByLabel('Display name').fill('Notices');
    await page.getByRole('button', { name: 'Create organization' }).click();
    await page.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
    await page.goto(`${service.url}/dashboard`);
    await page.getByLabel('Account', { exact: true }).selectOption(handle);
    await page.getByLabel('Handle', { exact: true }).fill('site');
    await page.getByLabel('Project name').fill('Site');
    await page.getByLabel('Source locale').fill('en');
    await page.getByLabel('Target locales').fill('de');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(new RegExp(`/accounts/${handle}/projects/site\\?notice=`));
    expect(await page.getByRole('status').textContent()).toBe('Project site created.');

    // A notice someone else wrote into a link is not shown, with or without a made-up signature …
    const forged = 'Your session expired. Call support at +1 555 0100.';
    const pages = [
      '/dashboard',
      `/orgs/${org}`,
      `/orgs/${org}/sign-in`,
      `/accounts/${handle}/projects/site`,
      `/accounts/${handle}/voice`,
      `/accounts/${handle}/glossary`,
      `/settings/models?account=${handle}`,
      '/settings/profile',
      `/accounts/${handle}`,
      '/settings/tokens',
      '/settings/apps',
      '/settings/identities',
    ];
    for (const path of pages) {
      for (const extra of ['', '&sig=AAAA', `&sig=${'A'.repeat(43)}`]) {
        const url = `${service.url}${path}${path.includes('?') ? '&' : '?'}notice=${encodeURIComponent(forged)}${extra}`;
        expect((await page.goto(url))?.status(), path).toBe(200);
        expect(await page.locator('main').textContent(), path).not.toContain('Call support');
      }
    }
    // … while the notice a form post leads to is; its signature fits its text only, and this session only.
    await page.goto(`${service.url}/settings/profile`);
    await page.getByLabel('Name').fill('Nora Notice');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.waitForURL(/\/settings\/profile\?notice=/);
    expect(await page.getByRole('status').textContent()).toBe('Profile saved.');
    const genuine = new URL(page.url());
    const altered = new URL(genuine);
    altered.searchParams.set('notice', forged);
    await page.goto(altered.toString());
    expect(await page.locator('main').textContent()).not.toContain('Call support');
    const { context: otherContext, page: other } = await signIn(uniqueHandle('ntc'), '/dashboard');
    await other.goto(genuine.toString());
    expect(await other.locator('h1').textContent()).toBe('Profile');
    expect(await other.locator('main').textContent()).not.toContain('Profile saved.');
    await otherContext.close();

    // The validator's complaints about a pattern or a size, as sentences rather than the rule itself.
    await page.goto(`${service.url}/settings/models?account=${handle}`);
    await page.getByLabel('Handle', { exact: true }).fill('gpt');
    await page.getByLabel('Provider and model').fill('gpt-4o');
    await page.getByLabel('Base URL (optional)').fill('ftp://llm.example.com/v1');
    await page.getByRole('button', { name: 'Add model' }).click();
    await page.locator('#f-baseUrl-error').waitFor();
    expect(await page.locator('#f-baseUrl-error').textContent()).toBe('Start with http:// or https://.');
    expect(await page.locator('#f-model-error').textContent()).toBe(
      'Write the provider and the model as provider:model, such as openai:gpt-4o.',
    );
    await page.goto(`${service.url}/accounts/${handle}/voice`);
    const overrides = Object.fromEntries(
      Array.from({ length: 201 }, (_, i) => [`de-x${String(i).padStart(3, '0')}`, { tone: 'calm' }]),
    );
    await page.getByLabel('Locale overrides (JSON)').fill(JSON.stringify(overrides));
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.locator('#f-localeOverrides-error').waitFor();
    expect(await page.locator('#f-localeOverrides-error').textContent()).toBe('Use at most 200 entries.');
    await context.close();
  });
});
