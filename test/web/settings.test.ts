// The settings pages in a real browser (Debian's chromium through playwright-core): sign in from
// /settings/tokens into a browser session (development sign-in here; providers in test/identity), create an
// account token, use it against the REST API, revoke it; CSRF and the `next` parameter; and the pieces
// around them over plain HTTP.

import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TOKEN_PATTERN } from '../../src/authz/account-tokens.ts';
import { TOKEN_LIMITS } from '../../src/domain/tokens.ts';
import { DEFAULT_NEXT, safeNext } from '../../src/web/sign-in/routes.ts';
import { CookieJar, sql, uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium, launchChromium } from '../support/environment.ts';
import { useOAuthService } from '../support/suite.ts';
import { confirmAction } from './page-checks.ts';

const service = useOAuthService();
let browser: Browser | undefined;

beforeAll(async () => {
  if (hasChromium) browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const api = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${service.url}/api/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
  });

/** A browser context signed in as a new user through /signin; returns it on /settings/tokens. */
async function signedInContext(handle: string): Promise<BrowserContext> {
  const context = await browser!.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  await page.goto(`${service.url}/signin?next=/settings/tokens`);
  await page.getByLabel('Handle').fill(handle);
  await page.getByRole('button', { name: 'Create and sign in' }).click();
  await page.waitForURL(`${service.url}/settings/tokens`);
  await page.close();
  return context;
}

describe.skipIf(!hasChromium)('settings pages in a browser', () => {
  it('signs in from the tokens page, creates a token, uses it, and revokes it', async () => {
    const context = await browser!.newContext({
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 1,
    });
    const page = await context.newPage();
    await page.goto(`${service.url}/settings/tokens`);

    // Not signed in: the sign-in page (development sign-in here), then straight back: no OAuth client,
    // no consent.
    await expect.poll(() => page.title()).toContain('Sign in');
    expect(await page.locator('h1').textContent()).toContain('Sign in to the localization service');
    const handle = uniqueHandle('set');
    await page.getByLabel('Handle').fill(handle);
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    await page.waitForURL(`${service.url}/settings/tokens`);
    expect(await page.locator('h1').textContent()).toBe('Account tokens');
    expect(await page.locator('main').textContent()).toContain(`@${handle}`);

    // Create a read-only token.
    await page.getByLabel('Name').fill('CI <read>');
    await page.getByLabel('Read projects').check();
    expect(await page.getByLabel('Expires after (days)').inputValue()).toBe('90');
    await page.getByLabel('Expires after (days)').fill('30');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.locator('#token-secret').waitFor();
    expect(await page.locator('h1').textContent()).toBe('Token “CI <read>” created');
    expect(await page.locator('main').textContent()).toContain('it will not be shown again');
    // A read-only field, named, that the keyboard reaches.
    const secret = await page.getByLabel('Token', { exact: true }).inputValue();
    expect(secret).toMatch(TOKEN_PATTERN);
    await page.screenshot({ path: join(tmpdir(), 'settings-token-created.png'), fullPage: true });

    // The secret works where project:read is enough, and nowhere beyond it.
    expect((await api(`/accounts/${handle}/projects`, secret)).status).toBe(200);
    const write = await api(`/accounts/${handle}/projects`, secret, {
      method: 'POST',
      body: JSON.stringify({ handle: 'app', name: 'App', sourceLocale: 'en', targetLocales: ['de'] }),
    });
    expect(write.status).toBe(403);

    // Reloading the page that showed the secret shows it no more and creates no second token (it was the
    // answer to the form's POST, and a reload posted the form again): the tokens page says why.
    expect(page.url()).toBe(`${service.url}/settings/tokens/created`);
    await page.reload();
    await page.waitForURL(/\/settings\/tokens\?/);
    expect(await page.getByRole('status').textContent()).toContain('shown once');
    expect(await page.getByRole('heading', { level: 3, name: /CI <read>/ }).count()).toBe(1);

    // Listed afterwards without its secret.
    const listed = (await page.locator('main').innerHTML()) ?? '';
    expect(listed).not.toContain(secret);
    expect(listed).toContain(secret.slice(0, 12));
    expect(await page.getByRole('heading', { level: 3, name: /CI <read>/ }).textContent()).toContain(
      'active',
    );
    await page.screenshot({ path: join(tmpdir(), 'settings-tokens-list.png'), fullPage: true });

    // Revoke: the page says so and the secret stops working.
    await confirmAction(page, 'Revoke CI <read>');
    await expect
      .poll(() => page.getByRole('heading', { level: 3, name: /CI <read>/ }).textContent())
      .toContain('revoked');
    expect((await api(`/accounts/${handle}/projects`, secret)).status).toBe(401);

    // Both recorded like the API records them, from the web door.
    const events = (await sql(
      service,
      `select action, details->>'door' as door, details->>'tokenPrefix' as prefix from audit_events
        where resource_type = 'account_token' and actor_user_id = (select user_id from accounts where handle = $1)
        order by occurred_at`,
      [handle],
    )) as { action: string; door: string; prefix: string }[];
    expect(events).toEqual([
      { action: 'token.create', door: 'web', prefix: secret.slice(0, 12) },
      { action: 'token.revoke', door: 'web', prefix: secret.slice(0, 12) },
    ]);

    // Signing in to the settings leaves no connected app behind; the pages link to each other; sign out.
    await page.getByRole('link', { name: 'Connected apps' }).click();
    await page.getByText('No apps are connected to your account.').waitFor();
    const grants = await sql(
      service,
      `select 1 from oidc_models where model = 'Grant' and payload->>'accountId' = (select user_id::text from accounts where handle = $1)`,
      [handle],
    );
    expect(grants).toEqual([]);
    await page.getByRole('link', { name: 'Account tokens' }).click();
    await page.waitForURL(`${service.url}/settings/tokens`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${service.url}/signin?signed_out=1`);
    expect(await page.locator('h1').textContent()).toContain('Sign in to the localization service');
    // Said, where a screen reader hears it, and in the title.
    expect(await page.getByRole('status').textContent()).toBe('You are signed out.');
    expect(await page.title()).toMatch(/^Signed out/);
    await page.goto(`${service.url}/settings/tokens`);
    expect(page.url()).toBe(`${service.url}/signin?next=${encodeURIComponent('/settings/tokens')}`);
    await context.close();
  });

  it('refuses POSTs without the CSRF token', async () => {
    const context = await signedInContext(uniqueHandle('csrf'));
    const request = context.request;
    const create = await request.post(`${service.url}/settings/tokens`, {
      form: { name: 'forged', scopes: 'project:read', expiresInDays: '5' },
      maxRedirects: 0,
    });
    expect(create.status()).toBe(403);
    const forged = await request.post(`${service.url}/settings/tokens`, {
      form: { csrf: 'not-the-token', name: 'forged', scopes: 'project:read', expiresInDays: '5' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    const signout = await request.post(`${service.url}/settings/signout`, { form: {}, maxRedirects: 0 });
    expect(signout.status()).toBe(403);
    // Still signed in, and no token was created.
    const page = await context.newPage();
    await page.goto(`${service.url}/settings/tokens`);
    expect(await page.locator('main').textContent()).toContain('You have no tokens yet.');
    await context.close();
  });

  it('checks the form and never offers or accepts scopes beyond the user’s roles', async () => {
    const context = await signedInContext(uniqueHandle('form'));
    const page = await context.newPage();
    await page.goto(`${service.url}/settings/tokens`);
    // A user with only a personal account may not manage organization members.
    expect(await page.locator('input[value="members:write"]').count()).toBe(0);
    expect(await page.locator('input[value="project:write"]').count()).toBe(1);
    const csrf = await page.locator('form[action="/settings/tokens"] input[name="csrf"]').inputValue();
    const post = (form: Record<string, string>) =>
      context.request.post(`${service.url}/settings/tokens`, { form: { csrf, ...form }, maxRedirects: 0 });
    const beyond = await post({ name: 'x', scopes: 'members:write', expiresInDays: '5' });
    expect(beyond.status()).toBe(403);
    expect(await beyond.text()).toContain('members:write');
    // The operation's own validation, each problem next to its field (from the problem's pointers), with
    // what was typed kept.
    const bad = await post({ name: ' ', expiresInDays: '400' });
    expect(bad.status()).toBe(400);
    await page.setContent(await bad.text());
    expect(await page.locator('#f-token-name-error').textContent()).toBe('Fill this in.');
    expect(await page.locator('#scopes-error').textContent()).toBe('Choose at least one.');
    expect(await page.locator('#f-token-days-error').textContent()).toBe('At most 366.');
    expect(await page.getByLabel('Expires after (days)').inputValue()).toBe('400');
    expect(await page.getByLabel('Expires after (days)').getAttribute('aria-invalid')).toBe('true');
    await context.close();
  });

  it('answers a NUL in the sign-in handle or the token name with the form again, not a 500', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(`${service.url}/signin?next=/settings/tokens`);
    const signIn = page.locator('form:has(input[name="create"])');
    const action = new URL((await signIn.getAttribute('action'))!, service.url).toString();
    const login = await context.request.post(action, {
      form: { next: '/settings/tokens', handle: 'ada\u0000' },
      maxRedirects: 0,
    });
    expect(login.status()).toBeLessThan(500);
    expect(await login.text()).toContain('No user has the handle');
    await context.close();

    const signedIn = await signedInContext(uniqueHandle('nul'));
    const tokens = await signedIn.newPage();
    await tokens.goto(`${service.url}/settings/tokens`);
    const tokenCsrf = await tokens.locator('form[action="/settings/tokens"] input[name="csrf"]').inputValue();
    const created = await signedIn.request.post(`${service.url}/settings/tokens`, {
      form: { csrf: tokenCsrf, name: 'ci\u0000', scopes: 'project:read', expiresInDays: '5' },
      maxRedirects: 0,
    });
    expect(created.status()).toBe(400);
    expect(await created.text()).toContain('U+0000');
    await signedIn.close();
  });

  it('does not follow a next that is not a settings page of ours', async () => {
    const context = await browser!.newContext();
    const page = await context.newPage();
    await page.goto(`${service.url}/signin?next=${encodeURIComponent('https://evil.example/settings/x')}`);
    await page.getByLabel('Handle').fill(uniqueHandle('nx'));
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    await page.waitForURL(`${service.url}${DEFAULT_NEXT}`);
    // Signed in already: /signin goes straight to next, still only to our own settings pages.
    await page.goto(`${service.url}/signin?next=https://evil.example`);
    expect(page.url()).toBe(`${service.url}${DEFAULT_NEXT}`);
    await page.goto(`${service.url}/signin?next=/settings/tokens`);
    expect(page.url()).toBe(`${service.url}/settings/tokens`);
    await context.close();
  });
});

describe('the sign-in page', () => {
  it('says what signing in is for when it leads back to an invitation or an app', async () => {
    const page = (next: string) =>
      fetch(`${service.url}/signin?next=${encodeURIComponent(next)}`).then((r) => r.text());
    expect(await page('/invitations/answer?token=abc')).toContain('Sign in to answer your invitation');
    expect(await page('/oauth/interaction/abc')).toContain(
      'Sign in to continue to the app that sent you here',
    );
    const plain = await page('/settings/tokens');
    expect(plain).not.toContain('Sign in to answer');
    expect(plain).not.toContain('Sign in to continue');
  });
});

describe('sign-in plumbing', () => {
  it('accepts only local settings, sign-in step and invitation paths as next', () => {
    const base = 'http://127.0.0.1:3000';
    expect(safeNext('/settings/tokens', base)).toBe('/settings/tokens');
    expect(safeNext('/settings/apps?x=1', base)).toBe('/settings/apps?x=1');
    expect(safeNext('/oauth/interaction/abc', base)).toBe('/oauth/interaction/abc');
    for (const bad of [
      'https://evil.example',
      '//evil.example/settings/',
      '/settings/../oauth/authorize',
      '/\\evil.example',
      '/settings/\\evil',
      '/other',
      '/oauth/authorize?client_id=x',
      `/settings/tokens?q=${'a'.repeat(2100)}`,
      `/settings/tokens?q=${'é'.repeat(400)}`,
      undefined,
      ['/settings/tokens'],
    ]) {
      expect(safeNext(bad, base)).toBe(DEFAULT_NEXT);
    }
  });

  it('has no first-party OAuth client any more: l10n-web is an unknown client', async () => {
    const jar = new CookieJar();
    const url = new URL(`${service.url}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'l10n-web',
      redirect_uri: `${service.url}/settings/callback`,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 's',
      scope: 'token:read',
    }).toString();
    const response = await jar.fetch(url.toString());
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('invalid_client');
    const token = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: 'l10n-web',
        code: 'any',
        code_verifier: 'x'.repeat(43),
        redirect_uri: `${service.url}/settings/callback`,
      }).toString(),
    });
    expect(token.status).toBe(401);
    expect(((await token.json()) as { error: string }).error).toBe('invalid_client');
  });

  it('uses the token limits openapi.yaml states', () => {
    const document = parse(readFileSync(join(import.meta.dirname, '../../openapi.yaml'), 'utf8'));
    const schema = document.components.schemas.AccountTokenCreate.properties;
    expect(schema.name.maxLength).toBe(TOKEN_LIMITS.nameMaxLength);
    expect(schema.description.maxLength).toBe(TOKEN_LIMITS.descriptionMaxLength);
    expect(schema.expiresInDays).toMatchObject({
      minimum: TOKEN_LIMITS.minLifetimeDays,
      maximum: TOKEN_LIMITS.maxLifetimeDays,
      default: TOKEN_LIMITS.defaultLifetimeDays,
    });
  });
});
