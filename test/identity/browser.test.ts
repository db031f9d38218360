import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { exchangeCode, registerAndRequestAuthorization, sql, uniqueHandle } from '../oauth/helpers.ts';
import { hasChromium } from '../support/environment.ts';
import { createTestOrganization, createTestUser } from '../support/fixtures.ts';
import { useChromium, useLoopbackCallback } from '../support/suite.ts';
import { upstreamLoginInPage, useUpstreamSignIn } from './upstream.ts';

const { service, upstream: google, github } = useUpstreamSignIn('google', { asGoogle: true });
const browser = useChromium();
const loopback = useLoopbackCallback();
const received = loopback.received;

/** An MCP client's authorization in this page: it must reach consent at once, be approved, and pay out. */
async function authorizeMcpClientWithoutSignIn(page: Page, signInFirst?: () => Promise<void>) {
  const { client, url, verifier } = await registerAndRequestAuthorization(
    service,
    loopback.uri,
    { state: 'mcp-state', scope: 'project:read', resource: `${service.url}/mcp` },
    { client_name: 'Agent' },
  );
  const before = received.length;
  await page.goto(url);
  if (signInFirst) {
    // Not signed in yet: the authorization's sign-in step offers the providers; back here afterwards.
    expect(await page.title()).toContain('Sign in');
    await signInFirst();
  }
  // Consent straight away: no (further) sign-in page in between.
  await page.getByRole('button', { name: 'Approve' }).waitFor();
  expect(await page.title()).not.toContain('Sign in');
  await page.getByRole('button', { name: 'Approve' }).click();
  await expect.poll(() => received.length).toBe(before + 1);
  const callback = received.at(-1)!;
  const { access_token: accessToken } = await exchangeCode(service, client, loopback.uri, {
    code: callback.searchParams.get('code')!,
    verifier,
  });
  // The token is good at the MCP endpoint (a tools/list answers with tools, not a 401).
  const mcp = await fetch(`${service.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${accessToken}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  expect(mcp.status).toBe(200);
}

describe.skipIf(!hasChromium)('signing in through providers in a browser', () => {
  it('signs in through the OpenID provider, then approves an MCP client in the same session', async () => {
    const login = uniqueHandle('alice');
    google.accounts.set(login, {
      email: `${login}@example.com`,
      email_verified: true,
      preferred_username: login,
      name: 'Alice Example',
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    // A page of the service sends a person who is not signed in to the sign-in page.
    await page.goto(`${service.url}/settings/tokens`);
    // The enabled providers and the organization sign-in; no development sign-in.
    await page.getByRole('link', { name: 'Sign in with Google' }).waitFor();
    expect(await page.getByRole('link', { name: 'Sign in with GitHub' }).count()).toBe(1);
    expect(await page.getByLabel('Work e-mail').count()).toBe(1);
    expect(await page.getByLabel('Handle').count()).toBe(0);
    await page.getByRole('link', { name: 'Sign in with Google' }).click();

    // The upstream provider's own pages.
    await upstreamLoginInPage(page, login);

    await page.waitForURL(`${service.url}/settings/tokens`);
    expect(await page.locator('main').textContent()).toContain(`@${login}`);
    const cookies = await context.cookies(service.url);
    const session = cookies.find((c) => c.name === 'l10n_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false });

    await authorizeMcpClientWithoutSignIn(page);

    // The same provider subject finds the same user after signing out and in again.
    await page.goto(`${service.url}/settings/sessions`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${service.url}/signin?signed_out=1`);
    await page.getByRole('link', { name: 'Sign in with Google' }).click();
    await upstreamLoginInPage(page, login);
    await page.waitForURL(`${service.url}/dashboard`);
    expect(await page.locator('main').textContent()).toContain(`@${login}`);
    const users = await sql(
      service,
      `select i.user_id, i.email, i.email_verified, u.email as user_email from identities i
         join users u on u.id = i.user_id where i.provider = 'google' and i.subject = $1`,
      [login],
    );
    expect(users).toEqual([
      expect.objectContaining({
        email: `${login}@example.com`,
        email_verified: true,
        user_email: `${login}@example.com`,
      }),
    ]);
    expect(await sql(service, `select 1 from accounts where handle like $1`, [`${login}%`])).toHaveLength(1);
    await context.close();
  });

  it('signs in through the GitHub stand-in, then approves an MCP client in the same session', async () => {
    const login = uniqueHandle('Octo_Cat');
    github.user = {
      id: 4242,
      login,
      name: 'Octo Cat',
      emails: [{ email: `${login.toLowerCase()}@example.org`, primary: true, verified: true }],
    };
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.url}/signin?next=/settings/identities`);
    await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
    await page.waitForURL(`${service.url}/settings/identities`);
    // The handle is proposed from the GitHub login, made valid.
    const handle = login.toLowerCase().replace(/_/g, '-');
    expect(await page.locator('main').textContent()).toContain(`@${handle}`);
    expect(await page.getByRole('heading', { level: 2, name: 'GitHub' }).count()).toBe(1);
    expect(await page.locator('main').textContent()).toContain('Your only way to sign in cannot be removed.');

    await authorizeMcpClientWithoutSignIn(page);
    await context.close();
  });

  it("signs in on an MCP client's authorization step through GitHub; a second client needs no sign-in", async () => {
    const login = uniqueHandle('agentuser');
    github.user = {
      id: 4343,
      login,
      emails: [{ email: `${login}@example.org`, primary: true, verified: true }],
    };
    const context = await browser.newContext();
    const page = await context.newPage();
    await authorizeMcpClientWithoutSignIn(page, async () => {
      expect(await page.getByLabel('Handle').count()).toBe(0);
      await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
    });
    expect(await page.context().cookies(service.url)).toContainEqual(
      expect.objectContaining({ name: 'l10n_session' }),
    );
    await authorizeMcpClientWithoutSignIn(page);
    await context.close();
  });

  it('opens an invitation link: sign in, see the organization and role, accept; a wrong e-mail is refused', async () => {
    const admin = await createTestUser(service, uniqueHandle('boss'));
    const org = uniqueHandle('team');
    await createTestOrganization(service, org, admin);
    const login = uniqueHandle('Invitee');
    const email = `${login.toLowerCase()}@example.org`;
    const invite = async (to: string) => {
      const created = await sdk.createInvitation({
        client: admin.client,
        path: { org },
        body: { email: to, role: 'admin' },
      });
      expect(created.response.status).toBe(201);
      return `${service.url}/invitations/answer?token=${encodeURIComponent(created.data!.acceptToken)}`;
    };
    const forSomeoneElse = await invite('someone-else@example.org');
    const forInvitee = await invite(email.toUpperCase());

    github.user = { id: 5151, login, emails: [{ email, primary: true, verified: true }] };
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(forInvitee);
    // Not signed in: the sign-in page first, then back to the invitation.
    await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
    await page.getByRole('button', { name: 'Accept' }).waitFor();
    const text = await page.locator('main').textContent();
    expect(text).toContain(`@${org}`);
    expect(text).toContain('admin');
    await page.getByRole('button', { name: 'Accept' }).click();
    // Accepted: the organization's page, with a welcome.
    await page.waitForURL(new RegExp(`/orgs/${org}`));
    expect(await page.locator('main').textContent()).toContain(`Welcome to @${org}`);
    const members = await sdk.listMembers({ client: admin.client, path: { org } });
    expect(members.data!.items.map((m: { user: string; role: string }) => [m.user, m.role])).toContainEqual([
      login.toLowerCase().replace(/_/g, '-'),
      'admin',
    ]);

    // The other invitation is not for this person's verified e-mail: the page says for whom it is and what to
    // do, and offers no answer (the API would refuse it: 403).
    await page.goto(forSomeoneElse);
    const main = await page.locator('main').textContent();
    expect(main).toContain('This invitation is for someone-else@example.org');
    expect(main).toContain('add a sign-in method');
    expect(await page.getByRole('button', { name: 'Accept' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Decline' }).count()).toBe(0);
    await context.close();
  });
});
