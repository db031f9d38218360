// What the pages do for people who use a keyboard or a screen reader, beyond what axe-core finds on every
// page the tours visit (page-checks.ts): where the focus goes when a form comes back refused, what a
// destructive button asks first, which language a translation is read in.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { startTestService } from '../support/service.ts';
import { useChromium, useService } from '../support/suite.ts';
import { confirmAction, DocumentTracker, devSignIn } from './page-checks.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const browser = useChromium();
const tracker = new DocumentTracker();
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

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

      // Refused for a reason the page's notice gives (the last admin leaving): the notice is an alert that
      // has the focus.
      const org = uniqueHandle('a1o');
      await page.goto(`${service.url}/dashboard`);
      await page.locator('#f-org-handle').fill(org);
      await page.locator('#f-org-name').fill('Solo');
      await page.getByRole('button', { name: 'Create organization' }).click();
      // Created (its page, with a notice) before going on: a goto at once could cut the form's POST off.
      await page.waitForURL(new RegExp(`/orgs/${org}\\?notice=`));
      await page.goto(`${service.url}/orgs/${org}`);
      await confirmAction(page, `Leave @${org}`);
      await page.waitForLoadState();
      expect(tracker.last(page)?.status()).toBe(409);
      expect(await page.title()).toMatch(/^Error: /);
      expect(
        await page.evaluate(() => [
          document.activeElement?.getAttribute('role'),
          document.activeElement?.textContent,
        ]),
      ).toEqual(['alert', expect.stringMatching(/admin/)]);

      // A link that leads nowhere is no refused form: its page keeps its title.
      await page.goto(`${service.url}/invitations/answer?token=nope`);
      expect(tracker.last(page)?.status()).toBe(404);
      expect(await page.title()).not.toMatch(/^Error/);
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('contrast', () => {
  // axe-core checks text contrast on every page the tours visit, in the light scheme the browser starts
  // in; the dark one is checked here. The edge of a form field is no text, and axe does not measure it:
  // this test does, against the box the field sits on (WCAG's 3:1 for what one must see to use a page).
  it('holds in the dark scheme too, and a form field has a visible edge in both', {
    timeout: 90_000,
  }, async () => {
    const owner = uniqueHandle('a1c');
    for (const colorScheme of ['light', 'dark'] as const) {
      const { context, page } = await devSignIn(
        browser,
        service,
        `${owner}${colorScheme[0]}`,
        '/settings/tokens',
        tracker,
      );
      try {
        await page.emulateMedia({ colorScheme });
        // A token, so that the list shows its "active" badge next to the form's fields and buttons.
        await page.getByLabel('Name').fill('ci');
        await page.getByRole('checkbox').first().check();
        await page.getByRole('button', { name: 'Create token' }).click();
        await page.goto(`${service.url}/settings/tokens`);
        await page.evaluate(AXE_SOURCE);
        const textContrast = await page.evaluate(async () => {
          // biome-ignore lint/suspicious/noExplicitAny: axe is the global the evaluated source defines.
          const result = await (globalThis as any).axe.run(document, { runOnly: ['color-contrast'] });
          return (
            result.violations as { nodes: { target: string[]; any: { message: string }[] }[] }[]
          ).flatMap((v) => v.nodes.map((n) => `${n.target.join(' ')}: ${n.any[0]?.message}`));
        });
        expect(textContrast, colorScheme).toEqual([]);
        const edges = await page.evaluate(() => {
          const channel = (c: number) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
          const luminance = (color: string) => {
            const [r, g, b] = color.match(/\d+(\.\d+)?/g)!.map((v) => channel(Number(v) / 255));
            return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
          };
          const backgroundOf = (element: Element | null): string => {
            for (let at = element; at; at = at.parentElement) {
              const color = getComputedStyle(at).backgroundColor;
              if (!/rgba\(.*, 0\)$/.test(color) && color !== 'transparent') return color;
            }
            return 'rgb(255, 255, 255)';
          };
          return [...document.querySelectorAll('input[type=text], input[type=number], select, textarea')].map(
            (field) => {
              const [a, b] = [
                luminance(getComputedStyle(field).borderTopColor),
                luminance(backgroundOf(field.parentElement)),
              ];
              return { id: field.id, ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
            },
          );
        });
        expect(edges.length, colorScheme).toBeGreaterThan(0);
        for (const edge of edges) expect(edge.ratio, `${colorScheme} ${edge.id}`).toBeGreaterThanOrEqual(3);
      } finally {
        await context.close();
      }
    }
  });
});

describe.skipIf(!hasChromium)('a glossary translation', () => {
  it('is marked with its language, so a screen reader pronounces it as such', {
    timeout: 60_000,
  }, async () => {
    const owner = uniqueHandle('a1l');
    const { context, page } = await devSignIn(
      browser,
      service,
      owner,
      `/accounts/${owner}/glossary`,
      tracker,
    );
    try {
      await page.locator('#f-entry-term').fill('dashboard');
      await page.locator('#f-entry-definition').fill('The main screen');
      await page.locator('#f-entry-translations').fill('de = Übersicht\nfr = tableau de bord');
      await page.getByRole('button', { name: 'Add entry' }).click();
      await page.waitForURL(/notice=/);
      const cell = page.locator('td[data-label="Translations"]');
      expect(await cell.locator('[lang="de"]').textContent()).toBe('Übersicht');
      expect(await cell.locator('[lang="fr"]').textContent()).toBe('tableau de bord');
      expect(await cell.textContent()).toBe('de: Übersicht; fr: tableau de bord');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('an action that cannot be undone', () => {
  it('is asked first, and the keyboard alone answers', { timeout: 60_000 }, async () => {
    const owner = uniqueHandle('a1d');
    const { context, page } = await devSignIn(browser, service, owner, '/settings/tokens', tracker);
    try {
      await page.getByLabel('Name').fill('ci');
      await page.getByRole('checkbox').first().check();
      await page.getByRole('button', { name: 'Create token' }).click();
      await page.goto(`${service.url}/settings/tokens`);
      const revoke = page.locator('details.confirm > summary', { hasText: 'Revoke ci' });
      const yes = page.getByRole('button', { name: 'Yes, revoke ci', exact: true });
      // As rendered, the verb and the name keep the space between them.
      expect(await revoke.innerText()).toBe('Revoke ci');
      // One key press on what looks like the button only opens the question: nothing is revoked yet.
      await revoke.focus();
      await page.keyboard.press('Enter');
      expect(await yes.isVisible()).toBe(true);
      expect(await page.locator('details.confirm .confirm-body p').first().textContent()).toContain(
        'cannot be undone',
      );
      await page.reload();
      expect(await page.locator('.badge.active').count()).toBe(1);
      // Open, Tab to the button, Enter: revoked.
      await revoke.focus();
      await page.keyboard.press('Enter');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Yes, revoke ci');
      await page.keyboard.press('Enter');
      await page.waitForURL(/notice=/);
      expect(await page.locator('.badge.active').count()).toBe(0);
      expect(await page.locator('[role=status]').textContent()).toContain('revoked');
    } finally {
      await context.close();
    }
  });
});

describe.skipIf(!hasChromium)('the development sign-in refused', () => {
  it('says so in the title and puts the focus on the handle, which says why', {
    timeout: 30_000,
  }, async () => {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      tracker.track(page);
      await page.goto(`${service.url}/signin?next=/dashboard`);
      await page.getByLabel('Handle').fill('Not A Handle!');
      await page.getByRole('button', { name: 'Create and sign in' }).click();
      await page.waitForLoadState();
      expect(tracker.last(page)?.status()).toBe(400);
      expect(await page.title()).toMatch(/^Error: Sign in/);
      expect(
        await page.evaluate(() => [
          document.activeElement?.id,
          document.activeElement?.getAttribute('aria-invalid'),
          document.activeElement?.getAttribute('aria-describedby'),
        ]),
      ).toEqual(['new-handle', 'true', 'handle-error']);
      // What was typed is there to correct.
      expect(await page.getByLabel('Handle').inputValue()).toBe('Not A Handle!');
    } finally {
      await context.close();
    }
  });
});
