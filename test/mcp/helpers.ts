import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser } from 'playwright-core';
import type { Scope } from '../../src/authz/scopes.ts';
import { Account } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import type { TestService } from '../support/service.ts';

/** An MCP SDK client connected to the service's /mcp with a bearer token (or none). */
export async function mcpClient(service: { url: string }, token?: string): Promise<Client> {
  const client = new Client({ name: 'l10n-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  return client;
}

/** Another personal-account token for an existing user, with the given scopes. */
export async function issueToken(service: TestService, handle: string, scopes: Scope[]): Promise<string> {
  const orm = await openDatabase(service.database.url);
  try {
    const em = orm.em.fork();
    const account = await em.findOneOrFail(Account, { handle }, { populate: ['user'] });
    const { secret } = issueAccountToken(em, {
      account,
      createdById: account.user!.id,
      name: 'mcp test',
      scopes,
    });
    await em.flush();
    return secret;
  } finally {
    await orm.close();
  }
}

/** A raw JSON-RPC POST to /mcp, for what the SDK client hides (status codes, headers). */
export function postMcp(
  service: { url: string },
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${service.url}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': '2025-06-18',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

export { launchChromium } from '../support/environment.ts';

/**
 * What the user does in the browser an agent opened: the development sign-in (creating the user) and the
 * consent page's Approve, which sends the browser on to the agent's loopback callback.
 */
export async function signInAndApprove(
  browser: Browser,
  authorizationUrl: string,
  handle: string,
  callback: string,
): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(authorizationUrl);
    await page.getByLabel('Handle').fill(handle);
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));
    return page.url();
  } finally {
    await context.close();
  }
}
