// What every browser-driven page suite checks on each page it visits, and how it signs a person in.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page, Response as PlaywrightResponse } from 'playwright-core';
import { expect } from 'vitest';
import { sql } from '../oauth/helpers.ts';
import type { TestService } from '../support/service.ts';

const SHOTS = join(import.meta.dirname, 'screenshots');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The last document each tab navigated to (after a form POST, the page answered to it). */
export class DocumentTracker {
  readonly #last = new Map<Page, PlaywrightResponse>();

  /** Follows the tab's documents; `onDocument` sees each one. */
  track(page: Page, onDocument?: (response: PlaywrightResponse) => void): void {
    page.on('response', (response) => {
      if (response.request().resourceType() === 'document' && response.frame() === page.mainFrame()) {
        this.#last.set(page, response);
        onDocument?.(response);
      }
    });
  }

  last(page: Page): PlaywrightResponse | undefined {
    return this.#last.get(page);
  }
}

/**
 * The page now showing: its CSP header (no 'unsafe-inline'), axe-core (no serious or critical violation),
 * and a full-page screenshot at 390 and 1280 px under test/web/screenshots (git-ignored).
 */
export async function checkPage(page: Page, document: PlaywrightResponse | undefined, name: string) {
  const csp = (await document?.allHeaders())?.['content-security-policy'] ?? '';
  expect(csp, name).toContain("default-src 'none'");
  expect(csp, name).not.toContain('unsafe-inline');
  // Runs axe through the devtools protocol, which the page's CSP does not govern (a <script> tag would be
  // refused, as it should be).
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    // biome-ignore lint/suspicious/noExplicitAny: axe is the global the evaluated source defines.
    const result = await (globalThis as any).axe.run(document);
    return (result.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  expect(violations, `${name}: ${violations.join('; ')}`).toEqual([]);
  mkdirSync(SHOTS, { recursive: true });
  const size = page.viewportSize()!;
  for (const width of [390, 1280]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize(size);
}

/** A new browser context signed in through the development sign-in as `handle` (created), at `next`. */
export async function devSignIn(
  browser: Browser,
  service: TestService,
  handle: string,
  next: string,
  tracker: DocumentTracker,
  onDocument?: (response: PlaywrightResponse) => void,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  tracker.track(page, onDocument);
  await page.goto(`${service.url}${next}`);
  // Not signed in: the sign-in page, which comes back here.
  await page.getByLabel('Handle').fill(handle);
  await page.getByRole('button', { name: 'Create and sign in' }).click();
  await page.waitForURL(`${service.url}${next}`);
  return { context, page };
}

/**
 * Gives `handle` the identity an upstream provider would have made, with `email` verified: only the invited
 * address answers an invitation, and the development sign-in links no provider. For the invitation tours.
 */
export async function giveVerifiedEmail(service: TestService, handle: string, email: string): Promise<void> {
  await sql(
    service,
    `insert into identities (id, user_id, provider, subject, email, email_verified)
     select gen_random_uuid(), user_id, 'oidc-test', $1, $2, true from accounts where handle = $1`,
    [handle, email],
  );
}

/**
 * Does what a destructive button says (views/confirm.eta): opens the disclosure named `label` ("Revoke ci")
 * and presses the button inside it ("Yes, revoke ci"), as a person does.
 */
export async function confirmAction(page: Page, label: string): Promise<void> {
  const summary = page.locator('details.confirm > summary').filter({ hasText: label });
  await summary.click();
  await page
    .getByRole('button', { name: `Yes, ${label[0]!.toLowerCase()}${label.slice(1)}`, exact: true })
    .click();
}
