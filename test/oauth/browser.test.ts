// The happy path in a real browser (Debian's chromium through playwright-core): sign-in, consent,
// redirect to a temporary loopback listener as an agent would run, then the connected-apps page.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasChromium } from '../support/environment.ts';
import { useChromium, useLoopbackCallback, useOAuthService } from '../support/suite.ts';
import { confirmAction } from '../web/page-checks.ts';
import { exchangeCode, registerAndRequestAuthorization, tokenRequest, uniqueHandle } from './helpers.ts';

const service = useOAuthService();
const browser = useChromium();
const loopback = useLoopbackCallback();
const received = loopback.received;

describe.skipIf(!hasChromium)('in a browser', () => {
  it('signs in, approves, reaches the loopback callback, and disconnects the app', async () => {
    const { client, url, verifier } = await registerAndRequestAuthorization(
      service,
      loopback.uri,
      { state: 'browser-state', scope: 'user:read project:read project:write glossary:read' },
      { client_name: 'Browser <Agent>' },
    );

    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(url);

    // Sign-in page: the client name is shown escaped, the handle field is labelled.
    await expect.poll(() => page.title()).toContain('Sign in');
    expect(await page.locator('h1').textContent()).toContain('Browser <Agent>');
    const handle = uniqueHandle('web');
    await page.getByLabel('Handle').fill('Not A Handle');
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('lowercase');
    await page.getByLabel('Handle').fill(handle);
    await page.getByRole('button', { name: 'Create and sign in' }).click();

    // Consent page: who, where it goes back to, and the scopes grouped by object in plain words.
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    expect(await page.locator('h1').textContent()).toContain('Browser <Agent>');
    const text = await page.locator('main').textContent();
    expect(text).toContain(`@${handle}`);
    expect(text).toContain('(an app on this computer)');
    expect(await page.getByRole('heading', { level: 3 }).allTextContents()).toEqual([
      'Your profile',
      'Projects',
      'Glossary',
    ]);
    expect(text).toContain('Create or update projects');
    await page.screenshot({ path: join(tmpdir(), 'oauth-consent.png'), fullPage: true });
    await page.getByRole('button', { name: 'Approve' }).click();

    await expect.poll(() => received.length).toBe(1);
    const callback = received[0]!;
    expect(callback.searchParams.get('state')).toBe('browser-state');
    const { refresh_token: refreshToken } = await exchangeCode(service, client, loopback.uri, {
      code: callback.searchParams.get('code')!,
      verifier,
    });

    // Connected apps: listed with its scopes; Disconnect revokes every token at once.
    await page.goto(`${service.url}/settings/apps`);
    expect(await page.getByRole('heading', { level: 2 }).allTextContents()).toEqual(['Browser <Agent>']);
    // A client id with NUL is refused by the pipeline's text rule like any input: a 400 page, not a 500.
    const appsCsrf = await page
      .locator('form[action^="/settings/apps/"] input[name="csrf"]')
      .first()
      .inputValue();
    const nul = await context.request.post(`${service.url}/settings/apps/x%00/revoke`, {
      form: { csrf: appsCsrf },
      maxRedirects: 0,
    });
    expect(nul.status()).toBe(400);
    await confirmAction(page, 'Disconnect Browser <Agent>');
    await page.getByText('No apps are connected to your account.').waitFor();
    const afterRevoke = await tokenRequest(service, {
      grant_type: 'refresh_token',
      client_id: client.client_id,
      refresh_token: refreshToken,
    });
    expect(afterRevoke.status).toBe(400);
    await context.close();
  });
});
