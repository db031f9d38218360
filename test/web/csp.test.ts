// Every page the service serves carries a strict Content-Security-Policy (nothing inline, nothing from
// elsewhere) and still renders: the stylesheet is a cached file, no page has inline script or style, and in
// chromium a whole sign-in and consent ends at the client's loopback redirect URI without a CSP violation.

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { formActionSource } from '../../src/lib/csp.ts';
import {
  CookieJar,
  csrfOf,
  postForm,
  registerAndRequestAuthorization,
  uniqueHandle,
} from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { useChromium, useLoopbackCallback, useOAuthService } from '../support/suite.ts';

const service = useOAuthService();
const browser = useChromium();
const loopback = useLoopbackCallback();
const received = loopback.received;

function directives(response: Response): Map<string, string[]> {
  const header = response.headers.get('content-security-policy');
  expect(header, response.url).toBeTruthy();
  return new Map(
    header!.split(';').map((d) => {
      const [name = '', ...values] = d.trim().split(/\s+/);
      return [name, values] as const;
    }),
  );
}

/** A strict policy, and a body with no inline script, style element or style attribute. */
async function expectStrictPage(response: Response, formTargets: string[] = []) {
  const csp = directives(response);
  expect(csp.get('default-src')).toEqual(["'none'"]);
  expect(csp.get('style-src')).toEqual(["'self'"]);
  expect(csp.get('script-src')).toEqual(["'self'"]);
  expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
  expect(csp.get('form-action')).toEqual(["'self'", ...formTargets]);
  const header = response.headers.get('content-security-policy')!;
  expect(header).not.toContain('unsafe-inline');
  expect(header).not.toContain('unsafe-eval');
  const body = await response.text();
  expect(response.headers.get('content-type')).toMatch(/^text\/html/);
  expect(body).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
  expect(body).toMatch(/<link rel="stylesheet" href="\/assets\/app\.css\?v=[\w-]+">/);
  return body;
}

const browserHeaders = { accept: 'text/html' };

describe('Content-Security-Policy over HTTP', () => {
  it('is on the start page, the settings pages, the 404 page and oidc-provider’s error page', async () => {
    for (const path of ['/', '/settings/apps', '/settings/tokens', '/no/such/page', '/oauth/authorize']) {
      await expectStrictPage(await fetch(`${service.url}${path}`, { headers: browserHeaders }));
    }
    // The API and discovery answer with it too (harmless for JSON, and no page slips through unprotected).
    const api = await fetch(`${service.url}/api/v1/user`);
    expect(directives(api).get('default-src')).toEqual(["'none'"]);
  });

  it('on sign-in and consent lets forms reach only our origin and the client’s redirect URI', async () => {
    const jar = new CookieJar();
    const { url } = await registerAndRequestAuthorization(service, 'http://127.0.0.1:53117/callback', {
      state: 's',
      scope: 'project:read',
    });
    const started = await jar.fetch(url);
    const interaction = new URL(started.headers.get('location')!, service.url).toString();
    const login = await jar.fetch(interaction);
    const loginHtml = await expectStrictPage(login, ['http://127.0.0.1:53117']);
    const signedIn = await postForm(jar, `${interaction}/login`, {
      csrf: csrfOf(loginHtml),
      handle: uniqueHandle('csp'),
      create: '1',
    });
    let next = new URL(signedIn.headers.get('location')!, service.url).toString();
    let consent = await jar.fetch(next);
    while (consent.status >= 300 && consent.status < 400) {
      next = new URL(consent.headers.get('location')!, service.url).toString();
      consent = await jar.fetch(next);
    }
    const consentHtml = await expectStrictPage(consent, ['http://127.0.0.1:53117']);
    expect(consentHtml).toContain('name="decision"');
  });

  it('lets oidc-provider’s form_post answer run only its own script (by hash) and post only to the client', async () => {
    const jar = new CookieJar();
    const { url } = await registerAndRequestAuthorization(service, 'http://127.0.0.1:53117/callback', {
      response_mode: 'form_post',
      state: 's',
      scope: 'project:read',
    });
    let response = await jar.fetch(url);
    for (let step = 0; step < 10 && response.status !== 200; step++) {
      const location = new URL(response.headers.get('location')!, service.url).toString();
      response = await jar.fetch(location);
      if (response.status !== 200 || !location.includes('/oauth/interaction/')) continue;
      const page = await response.text();
      const path = new URL(location).pathname;
      response = page.includes('name="decision"')
        ? await postForm(jar, `${service.url}${path}/consent`, { csrf: csrfOf(page), decision: 'approve' })
        : await postForm(jar, `${service.url}${path}/login`, {
            csrf: csrfOf(page),
            handle: uniqueHandle('fp'),
            create: '1',
          });
    }
    expect(response.status).toBe(200);
    const csp = directives(response);
    expect(csp.get('form-action')).toEqual(["'self'", 'http://127.0.0.1:53117']);
    const scriptSources = csp.get('script-src')!;
    expect(scriptSources[0]).toBe("'self'");
    expect(scriptSources.slice(1)).toHaveLength(1);
    expect(scriptSources[1]).toMatch(/^'sha256-[\w+/=]+'$/);
    const body = await response.text();
    expect(body).toContain('<form method="post" action="http://127.0.0.1:53117/callback">');
    expect(body).toContain('name="code"');
  });

  it('names the narrowest source for a redirect URI, and nothing for what is not a URI', () => {
    expect(formActionSource('http://127.0.0.1:4000/cb?x=1')).toBe('http://127.0.0.1:4000');
    expect(formActionSource('https://app.example/cb')).toBe('https://app.example');
    expect(formActionSource('cursor://anysphere.cursor-retrieval/oauth/callback')).toBe('cursor:');
    expect(formActionSource('not a uri; script-src *')).toBeUndefined();
  });

  it('serves the stylesheet from a file with a long cache', async () => {
    const home = await (await fetch(`${service.url}/`, { headers: browserHeaders })).text();
    const href = /href="(\/assets\/app\.css\?v=[\w-]+)"/.exec(home)![1]!;
    const css = await fetch(`${service.url}${href}`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(css.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await css.text()).toContain('button.primary');
  });
});

/** Collects what chromium reports about the Content-Security-Policy while `work` runs on a page. */
async function cspViolations(page: Page): Promise<string[]> {
  const seen: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) seen.push(message.text());
  });
  return seen;
}

describe.skipIf(!hasChromium)('Content-Security-Policy in chromium', () => {
  it('styles every page, and a sign-in with consent reaches the loopback redirect URI', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const violations = await cspViolations(page);

    for (const path of ['/', '/no/such/page', '/settings/apps', '/oauth/authorize']) {
      await page.goto(`${service.url}${path}`);
      // The stylesheet applied: system-ui body font and no default margin come from app.css only.
      expect(await page.evaluate(() => getComputedStyle(document.body).margin)).toBe('0px');
    }

    const { url } = await registerAndRequestAuthorization(service, loopback.uri, {
      state: 'csp-state',
      scope: 'project:read',
    });
    await page.goto(url);
    await page.getByLabel('Handle').fill(uniqueHandle('cspb'));
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    expect(await page.evaluate(() => getComputedStyle(document.body).margin)).toBe('0px');
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]!.searchParams.get('state')).toBe('csp-state');
    expect(received[0]!.searchParams.get('code')).toBeTruthy();
    expect(violations).toEqual([]);
    await context.close();
  });
});
