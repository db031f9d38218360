// The front door: the start page a newcomer opens from `npm start`'s URL (in chromium), the OpenAPI
// document it links, and what any path nobody serves answers.

import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPENAPI_FILE } from '../../src/api/catalogue.ts';
import { hasChromium, launchChromium } from '../support/environment.ts';
import { startTestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
let browser: Browser | undefined;

beforeAll(async () => {
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!hasChromium)('start page in a browser', () => {
  it('says what the service is, shows the MCP URL, and leads to the settings pages', async () => {
    const page = await browser!.newPage({ viewport: { width: 390, height: 844 } });
    const response = await page.goto(`${service.url}/`);
    expect(response?.status()).toBe(200);
    expect(await page.locator('h1').textContent()).toBe('Localization service');
    expect(await page.locator('#mcp-url').textContent()).toBe(`${service.config.baseUrl}/mcp`);
    await page.screenshot({ path: join(tmpdir(), 'home.png'), fullPage: true });

    expect(await page.getByRole('link', { name: 'openapi.yaml' }).getAttribute('href')).toBe('/openapi.yaml');
    const settingsLinks = {
      'account tokens': '/settings/tokens',
      'connected apps': '/settings/apps',
      'sign-in methods': '/settings/identities',
      sessions: '/settings/sessions',
    };
    for (const [name, href] of Object.entries(settingsLinks)) {
      expect(await page.getByRole('link', { name, exact: true }).getAttribute('href')).toBe(href);
    }
    await page.getByRole('link', { name: 'Dashboard' }).click();
    // Not signed in: the sign-in page, which comes back to the dashboard.
    await page.waitForURL(`${service.url}/signin?next=${encodeURIComponent('/dashboard')}`);
    expect(await page.locator('h1').textContent()).toContain('Sign in');
    await page.close();
  });

  it('shows a page with a way back for a path nobody serves', async () => {
    const page = await browser!.newPage();
    const response = await page.goto(`${service.url}/no/such/page`);
    expect(response?.status()).toBe(404);
    expect(await page.locator('main').textContent()).toContain('/no/such/page');
    await page.getByRole('link', { name: 'Go to the start page' }).click();
    await page.waitForURL(`${service.url}/`);
    await page.close();
  });
});

describe('front door over HTTP', () => {
  it('serves the openapi.yaml the service runs on, readable from any origin', async () => {
    const response = await fetch(`${service.url}/openapi.yaml`, {
      headers: { origin: 'https://editor.example' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(parse(await response.text())).toEqual(parse(readFileSync(OPENAPI_FILE, 'utf8')));
  });

  it('answers unknown paths outside the API with problem+json to non-browsers', async () => {
    for (const path of ['/no/such/thing', '/settings/nothing-here']) {
      const response = await fetch(`${service.url}${path}`, { headers: { accept: 'application/json' } });
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(await response.json()).toMatchObject({ status: 404, title: 'Not found' });
    }
    const posted = await fetch(`${service.url}/`, { method: 'POST' });
    expect(posted.status).toBe(404);
    expect(posted.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});
