// A form saved in a real browser (Debian's chromium) keeps every text it leaves alone exactly as the API
// stored it. A browser gives back a text changed even when nobody touched it: HTML reads every CR and CRLF
// of a page as LF, and a text input drops line breaks. A save of one field used to merge the lines of a
// one-line field and turn CRLF into LF in the others.
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

/** Clicks a form's button and waits for the redirect that follows a saved form (303, then a GET). */
async function submit(page: Page, button: string): Promise<void> {
  const saved = page.waitForResponse((response) => response.request().method() === 'GET');
  await page.getByRole('button', { name: button }).click();
  expect((await saved).status()).toBe(200);
  expect(await page.locator('[role="status"]').allTextContents()).toContainEqual(
    expect.stringMatching(/saved/i),
  );
}

describe.skipIf(!hasChromium)('a form saved in a browser', () => {
  it('keeps the texts it leaves alone exactly as the API stored them', async () => {
    const ada = await createTestUser(service, uniqueHandle('unt'));
    const account = { account: ada.handle };
    const voice = {
      tone: 'first line\nsecond line',
      targetAudience: 'line1\r\nline2\r',
      guidelines: '\r\nstarts with a break\r\nand has CRLF',
      culturalNotes: 'a lone\rcarriage return',
    };
    expect((await sdk.saveVoice({ client: ada.client, path: account, body: voice })).response.status).toBe(
      201,
    );
    const project = { name: 'Line one\nLine two', description: 'one\r\ntwo' };
    const created = await sdk.createProject({
      client: ada.client,
      path: account,
      body: { handle: 'site', sourceLocale: 'en', ...project },
    });
    expect(created.response.status).toBe(201);
    const entry = {
      term: 'alpha',
      definition: '\r\nline\r\n',
      translations: { fr: '\r\nligne\r\n!', de: '\r\nZeile\r\n', it: '\rx' },
    };
    await sdk.saveGlossary({ client: ada.client, path: account, body: { entries: [entry] } });

    const context = await browserOf(ada);
    try {
      const page = await context.newPage();
      // The voice: only the change note is typed.
      await page.goto(`${service.url}/accounts/${ada.handle}/voice`);
      await page.getByLabel('Change note').fill('a note, nothing else');
      await submit(page, 'Save as a new version');
      const savedVoice = await sdk.getVoice({ client: ada.client, path: account });
      expect(savedVoice.data).toMatchObject({ version: 2, ...voice, changeNote: 'a note, nothing else' });

      // The project, saved as it is shown.
      await page.goto(`${service.url}/accounts/${ada.handle}/projects/site`);
      await submit(page, 'Save project');
      const savedProject = await sdk.getProject({
        client: ada.client,
        path: { ...account, project: 'site' },
      });
      expect(savedProject.data).toMatchObject(project);

      // A glossary entry saved without an edit saves no version; one saved for a flag keeps its texts (a
      // lone CR in a translation used to make it unsavable).
      await page.goto(`${service.url}/accounts/${ada.handle}/glossary?edit=alpha#entry`);
      await submit(page, 'Save entry');
      expect((await sdk.getGlossary({ client: ada.client, path: account })).data).toMatchObject({
        version: 1,
      });
      await page.goto(`${service.url}/accounts/${ada.handle}/glossary?edit=alpha#entry`);
      await page.getByLabel('Case-sensitive').check();
      await submit(page, 'Save entry');
      const savedGlossary = await sdk.getGlossary({ client: ada.client, path: account });
      expect(savedGlossary.data).toMatchObject({ version: 2 });
      expect(savedGlossary.data!.entries).toEqual([
        { ...entry, caseSensitive: true, doNotTranslate: false, forbidden: false },
      ]);

      // An organization's name and the person's own, each saved as shown.
      const org = uniqueHandle('org');
      const orgName = 'Org\tTwo\r\nsecond';
      await sdk.createOrganization({ client: ada.client, body: { handle: org, displayName: orgName } });
      await page.goto(`${service.url}/orgs/${org}`);
      await submit(page, 'Save profile');
      const savedOrg = await sdk.getOrganization({ client: ada.client, path: { org } });
      expect(savedOrg.data!.displayName).toBe(orgName);
      const ownName = 'Ada\nLovelace ';
      await sdk.updateCurrentUser({ client: ada.client, body: { displayName: ownName } });
      await page.goto(`${service.url}/settings/profile`);
      await submit(page, 'Save profile');
      expect((await sdk.getCurrentUser({ client: ada.client })).data!.displayName).toBe(ownName);

      // An edit still saves what was typed: the browser's own line breaks, as LF.
      await page.goto(`${service.url}/accounts/${ada.handle}/projects/site`);
      await page.getByLabel('Description').fill('edited\nnow');
      await submit(page, 'Save project');
      const editedProject = await sdk.getProject({
        client: ada.client,
        path: { ...account, project: 'site' },
      });
      expect(editedProject.data).toMatchObject({ name: project.name, description: 'edited\nnow' });
    } finally {
      await context.close();
    }
  });
});
