// Two people (or a person and an agent) editing a project or an organization at once, in a real browser
// (Debian's chromium). A form carries the revision and the values it showed, and saves only what the
// person changed: a change someone made meanwhile to another field is kept, where the form used to send
// every field back and undo it, and a field both changed comes back to the person to decide.
import type { BrowserContext, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { signedInBrowser, uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { useChromium, useService } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const browser = useChromium();

const browserOf = (user: TestUser): Promise<BrowserContext> => signedInBrowser(service, browser, user.handle);

/** Clicks the form's button and gives back the status of the page it ends on. */
async function save(page: Page, button: string): Promise<number> {
  const landed = page.waitForResponse(
    (response) => response.request().resourceType() === 'document' && response.status() !== 303,
  );
  await page.getByRole('button', { name: button }).click();
  return (await landed).status();
}

const notices = (page: Page) => page.locator('[role="status"]').allTextContents();

describe.skipIf(!hasChromium)('edit forms of a project and an organization', () => {
  it('keep a change someone made meanwhile to another field, and ask about a field both changed', async () => {
    const ada = await createTestUser(service, uniqueHandle('eip'));
    const path = { account: ada.handle, project: 'site' };
    await sdk.createProject({
      client: ada.client,
      path: { account: ada.handle },
      body: { handle: 'site', name: 'Site', sourceLocale: 'en', targetLocales: ['de'] },
    });
    const url = `${service.url}/accounts/${ada.handle}/projects/site`;
    const context = await browserOf(ada);
    try {
      const first = await context.newPage();
      const second = await context.newPage();
      await first.goto(url);
      await second.goto(url);

      // Two forms built on the same revision, each changing its own field: both changes stay.
      await first.getByLabel('Description').fill('The public website');
      expect(await save(first, 'Save project')).toBe(200);
      expect(await notices(first)).toContainEqual(expect.stringContaining('Project saved.'));
      await second.getByLabel('Target locales').fill('de fr');
      expect(await save(second, 'Save project')).toBe(200);
      expect(await notices(second)).toContainEqual(expect.stringContaining('Project saved.'));
      let stored = (await sdk.getProject({ client: ada.client, path })).data!;
      expect(stored).toMatchObject({ description: 'The public website', targetLocales: ['de', 'fr'] });

      // An agent adds a locale while the form is open; the person renames the project.
      await first.goto(url);
      await sdk.updateProject({ client: ada.client, path, body: { targetLocales: ['de', 'fr', 'ja'] } });
      await first.getByLabel('Project name').fill('Website');
      expect(await save(first, 'Save project')).toBe(200);
      stored = (await sdk.getProject({ client: ada.client, path })).data!;
      expect(stored).toMatchObject({ name: 'Website', targetLocales: ['de', 'fr', 'ja'] });

      // Both rename it: the second form comes back, nothing saved, with the person's name and the
      // other changes shown.
      await first.goto(url);
      await second.goto(url);
      await first.getByLabel('Project name').fill('Alpha');
      await first.getByLabel('Description').fill('Changed by the first');
      expect(await save(first, 'Save project')).toBe(200);
      await second.getByLabel('Project name').fill('Beta');
      expect(await save(second, 'Save project')).toBe(412);
      const form = second.getByRole('form', { name: 'Edit project' });
      await expect
        .poll(() => form.textContent())
        .toContain('You and they both changed Project name: yours is shown');
      expect(await second.getByLabel('Project name').inputValue()).toBe('Beta');
      expect(await second.getByLabel('Description').inputValue()).toBe('Changed by the first');
      stored = (await sdk.getProject({ client: ada.client, path })).data!;
      expect(stored.name).toBe('Alpha');
      // Saved again, it builds on what is stored now, knowingly.
      expect(await save(second, 'Save project')).toBe(200);
      stored = (await sdk.getProject({ client: ada.client, path })).data!;
      expect(stored).toMatchObject({ name: 'Beta', description: 'Changed by the first' });

      // A form that does not say what it showed (sent before forms carried it) and is stale comes back with
      // every field it sends unlike what is stored named, and saves nothing.
      await first.goto(url);
      const csrf = await first
        .locator('form[aria-labelledby="edit-project"] input[name="csrf"]')
        .inputValue();
      const shownTag = await first.locator('input[name="etag"]').inputValue();
      await sdk.updateProject({ client: ada.client, path, body: { description: 'Meanwhile' } });
      const baseless = await context.request.post(url, {
        form: {
          csrf,
          etag: shownTag,
          name: 'Gamma',
          description: 'Changed by the first',
          sourceLocale: 'en',
        },
        maxRedirects: 0,
      });
      expect(baseless.status()).toBe(412);
      expect(await baseless.text()).toContain(
        'You and they both changed Project name, Description, Target locales',
      );
      expect((await sdk.getProject({ client: ada.client, path })).data).toMatchObject({
        name: 'Beta',
        description: 'Meanwhile',
      });

      // A form saved as it was shown changes nothing, not even the revision.
      const before = (await sdk.getProject({ client: ada.client, path })).data!.etag;
      await first.goto(url);
      expect(await save(first, 'Save project')).toBe(200);
      expect(await notices(first)).toContainEqual(expect.stringContaining('nothing was saved'));
      expect((await sdk.getProject({ client: ada.client, path })).data!.etag).toBe(before);
    } finally {
      await context.close();
    }
  });

  it('count a space or a line break as a change, and show a refusal on top of a newer revision as it is', async () => {
    const ada = await createTestUser(service, uniqueHandle('eis'));
    const path = { account: ada.handle, project: 'site' };
    await sdk.createProject({
      client: ada.client,
      path: { account: ada.handle },
      body: { handle: 'site', name: 'Web', sourceLocale: 'en', targetLocales: ['de', 'fr'] },
    });
    const url = `${service.url}/accounts/${ada.handle}/projects/site`;
    const context = await browserOf(ada);
    try {
      const page = await context.newPage();
      // An agent adds Italian while the form is open; the person's form adds a space after the locales it
      // showed. That is a change of the same field: the form comes back, and Italian stays.
      await page.goto(url);
      await sdk.updateProject({ client: ada.client, path, body: { targetLocales: ['de', 'fr', 'it'] } });
      await page.getByLabel('Target locales').fill('de fr ');
      expect(await save(page, 'Save project')).toBe(412);
      expect(await page.getByRole('form', { name: 'Edit project' }).textContent()).toContain(
        'You and they both changed Target locales',
      );
      expect(await page.locator('#f-targetLocales-error').textContent()).toContain('They saved: de fr it');
      expect((await sdk.getProject({ client: ada.client, path })).data!.targetLocales).toEqual([
        'de',
        'fr',
        'it',
      ]);

      // The same with a space added after a name someone renamed meanwhile.
      await page.goto(url);
      await sdk.updateProject({ client: ada.client, path, body: { name: 'Renamed' } });
      await page.getByLabel('Project name').fill('Web ');
      expect(await save(page, 'Save project')).toBe(412);
      expect((await sdk.getProject({ client: ada.client, path })).data!.name).toBe('Renamed');

      // Saved on top of a newer revision and refused there: the form shows that revision, so the clash
      // it is told of is one it shows (Italian, added meanwhile, is now also the source locale).
      await page.goto(url);
      await sdk.updateProject({ client: ada.client, path, body: { description: 'By the agent' } });
      await page.getByLabel('Source locale').fill('it');
      expect(await save(page, 'Save project')).toBe(400);
      expect(await page.getByLabel('Description').inputValue()).toBe('By the agent');
      expect(await page.getByLabel('Target locales').inputValue()).toBe('de fr it');
      expect(await page.getByLabel('Source locale').inputValue()).toBe('it');
      expect(await page.getByRole('form', { name: 'Edit project' }).textContent()).toContain(
        'Someone saved the project while you were editing',
      );

      // Locales typed another way for the same list save nothing, and say so.
      await page.goto(url);
      await page.getByLabel('Target locales').fill('DE, fr,,IT');
      expect(await save(page, 'Save project')).toBe(200);
      expect(await notices(page)).toContainEqual(expect.stringContaining('nothing was saved'));

      // A form from a page opened before forms carried their revision (no etag, no base) cannot tell the
      // person's changes from anyone else's: it saves nothing and comes back, each field it sends unlike
      // what is stored marked. It used to save them, putting back whatever someone had changed meanwhile.
      await page.goto(url);
      const csrf = await page.locator('form[aria-labelledby="edit-project"] input[name="csrf"]').inputValue();
      const old = await context.request.post(url, {
        form: {
          csrf,
          name: 'From an old page',
          description: 'By the agent',
          sourceLocale: 'en',
          targetLocales: 'de fr',
        },
        maxRedirects: 0,
      });
      expect(old.status()).toBe(412);
      const told = await old.text();
      expect(told).toContain('This form did not say which version of the project it showed');
      expect(told).toContain('Project name, Target locales differ from what is stored now');
      expect(told).toContain('Stored now: de fr it');
      expect((await sdk.getProject({ client: ada.client, path })).data).toMatchObject({
        name: 'Renamed',
        targetLocales: ['de', 'fr', 'it'],
      });

      // Such a form comes back built on what is stored, and then saves what the person typed, kept through
      // a refusal for a value and sent again fixed.
      await page.goto(url);
      await page.evaluate(() => {
        for (const name of ['etag', 'base']) document.querySelector(`input[name="${name}"]`)?.remove();
      });
      await page.getByLabel('Description').fill('Typed on an old page');
      await page.getByLabel('Source locale').fill('de');
      expect(await save(page, 'Save project')).toBe(412);
      expect(await save(page, 'Save project')).toBe(400);
      await page.getByLabel('Source locale').fill('en');
      expect(await save(page, 'Save project')).toBe(200);
      expect((await sdk.getProject({ client: ada.client, path })).data).toMatchObject({
        description: 'Typed on an old page',
        sourceLocale: 'en',
      });
    } finally {
      await context.close();
    }
  });

  it('neither save onto nor delete another project made under the handle, nor delete one changed since the page', async () => {
    const ada = await createTestUser(service, uniqueHandle('eir'));
    const path = { account: ada.handle, project: 'gone' };
    const make = (name: string) =>
      sdk.createProject({
        client: ada.client,
        path: { account: ada.handle },
        body: { handle: 'gone', name, sourceLocale: 'en', targetLocales: ['de'] },
      });
    await make('Gone');
    const url = `${service.url}/accounts/${ada.handle}/projects/gone`;
    const context = await browserOf(ada);
    try {
      const page = await context.newPage();
      // The project is deleted and another made under its handle while the form is open.
      await page.goto(url);
      await sdk.deleteProject({ client: ada.client, path });
      await make("Someone else's");
      await page.getByLabel('Description').fill('About the old project');
      expect(await save(page, 'Save project')).toBe(412);
      expect(await page.getByRole('form', { name: 'Edit project' }).textContent()).toContain(
        'The project under this name is not the one this page showed',
      );
      expect((await sdk.getProject({ client: ada.client, path })).data).toMatchObject({
        name: "Someone else's",
        description: '',
      });
      // A tampered revision no header can carry is told the same way, not as an empty error page.
      const csrf = await page.locator('form[aria-labelledby="edit-project"] input[name="csrf"]').inputValue();
      const tampered = await context.request.post(url, {
        form: { csrf, etag: '"p1\u0001"', name: 'Tampered', sourceLocale: 'en', targetLocales: 'de' },
        maxRedirects: 0,
      });
      expect(tampered.status()).toBe(412);
      expect(await tampered.text()).toContain('Nothing was saved.');

      // The delete page deletes the project as it showed it: one changed since is shown again to confirm.
      const deleteUrl = `${url}/delete`;
      const confirmDelete = async () => {
        await page.getByLabel('Type the project handle gone to confirm').fill('gone');
        return save(page, "Delete Someone else's");
      };
      await page.goto(deleteUrl);
      await sdk.updateProject({ client: ada.client, path, body: { description: 'Changed meanwhile' } });
      expect(await confirmDelete()).toBe(412);
      expect(await page.locator('main').textContent()).toContain(
        'Someone changed the project since this page was opened: nothing was deleted.',
      );
      expect((await sdk.getProject({ client: ada.client, path })).response.status).toBe(200);

      // Nor is another project made under its handle deleted.
      await page.goto(deleteUrl);
      await sdk.deleteProject({ client: ada.client, path });
      await make("Someone else's");
      expect(await confirmDelete()).toBe(412);
      expect(await page.locator('main').textContent()).toContain(
        'The project under this name is not the one this page showed',
      );
      expect((await sdk.getProject({ client: ada.client, path })).response.status).toBe(200);

      // Confirmed again on the page that now shows it, it is deleted.
      expect(await confirmDelete()).toBe(200);
      expect((await sdk.getProject({ client: ada.client, path })).response.status).toBe(404);
    } finally {
      await context.close();
    }
  });

  it("keep an organization's visibility changed meanwhile when the form renames it", async () => {
    const ada = await createTestUser(service, uniqueHandle('eio'));
    const handle = uniqueHandle('org');
    await sdk.createOrganization({ client: ada.client, body: { handle, displayName: 'Org' } });
    const context = await browserOf(ada);
    try {
      const page = await context.newPage();
      await page.goto(`${service.url}/orgs/${handle}`);
      await sdk.updateOrganization({
        client: ada.client,
        path: { org: handle },
        body: { visibility: 'public' },
      });
      await page.getByLabel('Display name').fill('Org Inc.');
      expect(await save(page, 'Save profile')).toBe(200);
      expect(await notices(page)).toContainEqual(expect.stringContaining('Organization saved.'));
      const stored = (await sdk.getOrganization({ client: ada.client, path: { org: handle } })).data!;
      expect(stored).toMatchObject({ displayName: 'Org Inc.', visibility: 'public' });

      // A form without its revision and what it showed, sent after someone made the organization private:
      // nothing is saved, where it used to make the organization public again.
      await page.goto(`${service.url}/orgs/${handle}`);
      const csrf = await page
        .locator('form[aria-label="Organization profile"] input[name="csrf"]')
        .inputValue();
      await sdk.updateOrganization({
        client: ada.client,
        path: { org: handle },
        body: { visibility: 'private' },
      });
      const old = await context.request.post(`${service.url}/orgs/${handle}`, {
        form: { csrf, displayName: 'Org GmbH', visibility: 'public' },
        maxRedirects: 0,
      });
      expect(old.status()).toBe(412);
      expect((await sdk.getOrganization({ client: ada.client, path: { org: handle } })).data).toMatchObject({
        displayName: 'Org Inc.',
        visibility: 'private',
      });
    } finally {
      await context.close();
    }
  });
});
