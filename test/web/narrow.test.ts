// Names people choose can be one long word (a 100-character project name, a long Hebrew display name, a
// token named after a path): on a 375 px phone the pages must wrap them, not scroll sideways.
import { describe, expect, it } from 'vitest';
import { uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { createTestOrganization, createTestUser } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { useChromium, useService } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const browser = useChromium();

const PHONE = 375;

describe.skipIf(!hasChromium)('pages on a 375 px phone', () => {
  it('wrap names that are one long word instead of scrolling sideways', { timeout: 120_000 }, async () => {
    const owner = await createTestUser(service, uniqueHandle('nar'));
    const org = uniqueHandle('naro');
    await createTestOrganization(service, org, owner);
    const api = (path: string, method: string, body: unknown) =>
      fetch(`${service.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const longName = `${'Ü'.repeat(50)}${'x'.repeat(50)}`;
    const hebrew = 'אבגדהוזחטיכלמנסעפצקרשת'.repeat(3);
    const term = 'Arbeitsbereichsverwaltungsoberflächenkomponente'.repeat(3);
    for (const [path, method, body] of [
      [`/organizations/${org}`, 'PATCH', { displayName: hebrew }],
      [`/accounts/${owner.handle}/projects`, 'POST', { handle: 'long', name: longName, sourceLocale: 'en' }],
      [`/accounts/${owner.handle}/tokens`, 'POST', { name: 'x'.repeat(100), scopes: ['project:read'] }],
      [`/accounts/${owner.handle}/glossary`, 'PUT', { entries: [{ term, definition: term }] }],
    ] as const) {
      const response = await api(path, method, body);
      expect(response.status, path).toBeLessThan(300);
    }

    // A voice the owner only reads (a member of another organization): its Markdown in plain blocks.
    const voiceAdmin = await createTestUser(service, uniqueHandle('nav'));
    const readOnly = uniqueHandle('narv');
    await createTestOrganization(service, readOnly, voiceAdmin, { members: [owner] });
    const paragraph = 'A guideline written as one long paragraph, as Markdown keeps it. '.repeat(20);
    const voice = await fetch(`${service.url}/api/v1/accounts/${readOnly}/voice`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${voiceAdmin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ guidelines: paragraph, culturalNotes: paragraph }),
    });
    expect(voice.status).toBe(201);

    const context = await browser.newContext({
      viewport: { width: PHONE, height: 800 },
      deviceScaleFactor: 1,
    });
    try {
      const page = await context.newPage();
      await page.goto(`${service.url}/signin?next=/dashboard`);
      await page.getByLabel('Handle').fill(owner.handle);
      await page.getByRole('button', { name: 'Create and sign in' }).click();
      await page.waitForURL(`${service.url}/dashboard`);
      for (const path of [
        '/dashboard',
        `/accounts/${owner.handle}`,
        `/accounts/${owner.handle}/projects/long`,
        `/accounts/${owner.handle}/projects/long/delete`,
        '/settings/tokens',
        `/orgs/${org}`,
        `/accounts/${org}`,
        `/accounts/${owner.handle}/glossary`,
        `/accounts/${owner.handle}/glossary?edit=${encodeURIComponent(term)}`,
        `/accounts/${readOnly}/voice`,
      ]) {
        expect((await page.goto(`${service.url}${path}`))?.status(), path).toBe(200);
        const width = await page.evaluate(() => document.documentElement.scrollWidth);
        expect(width, path).toBeLessThanOrEqual(PHONE);
      }
    } finally {
      await context.close();
    }
  });
});
