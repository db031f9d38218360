// What the pages do for people who use a keyboard or a screen reader, beyond what axe-core finds on every
// page the tours visit (page-checks.ts): where the focus goes when a form comes back refused, what a
// destructive button asks first, which language a translation is read in.
import { describe, expect, it } from 'vitest';
import { uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { startTestService } from '../support/service.ts';
import { useChromium, useService } from '../support/suite.ts';
import { DocumentTracker, devSignIn } from './page-checks.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const browser = useChromium();
const tracker = new DocumentTracker();

describe.skipIf(!hasChromium)('a form sent back refused', () => {
  it('says so in the title and puts the focus on the first problem', { timeout: 60_000 }, async () => {
    const owner = uniqueHandle('a11');
    const { context, page } = await devSignIn(browser, service, owner, '/dashboard', tracker);
    try {
      const title = await page.title();
      expect(title).not.toMatch(/^Error/);
      await page.locator('#f-project-handle').fill('Bad Handle!');
      await page.locator('#f-project-name').fill('A project');
      await page.locator('#f-project-handle').press('Enter');
      await page.waitForURL(`${service.url}/dashboard/projects`);
      expect(tracker.last(page)?.status()).toBe(400);
      expect(await page.title()).toBe(`Error: ${title}`);
      // The field itself has the focus: a screen reader reads its label, that it is invalid, and why.
      const focused = await page.evaluate(() => ({
        id: document.activeElement?.id,
        invalid: document.activeElement?.getAttribute('aria-invalid'),
        describedBy: document.activeElement?.getAttribute('aria-describedby'),
      }));
      expect(focused).toEqual({
        id: 'f-project-handle',
        invalid: 'true',
        describedBy: 'f-project-handle-hint f-project-handle-error',
      });
      expect(await page.locator('#f-project-handle-error').textContent()).toMatch(/lowercase letters/);

      // A problem of a group of checkboxes (a token with no scope): its message has the focus.
      await page.goto(`${service.url}/settings/tokens`);
      await page.getByLabel('Name').fill('no scopes');
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.waitForLoadState();
      expect(tracker.last(page)?.status()).toBeGreaterThanOrEqual(400);
      expect(await page.title()).toMatch(/^Error: /);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('scopes-error');
    } finally {
      await context.close();
    }
  });
});
