// mcp-remote (the npm package stdio-only clients use to reach remote servers) connects to /mcp with its own
// dynamic registration and local callback listener. It prints the authorization URL and tries to open a
// browser; here the "browser" it opens only records the URL, and headless chromium does the user's part.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium } from '../support/environment.ts';
import { freePort } from '../support/ports.ts';
import { startTestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';
import { launchChromium, signInAndApprove } from './helpers.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
let browser: Browser;
let dir: string;

beforeAll(async () => {
  browser = await launchChromium();
  dir = mkdtempSync(join(tmpdir(), 'l10n-mcp-remote-'));
});
afterAll(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const mcpRemoteBin = () => {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('mcp-remote/package.json')), 'dist', 'proxy.js');
};

describe.skipIf(!hasChromium)('mcp-remote', () => {
  it('registers, completes the browser sign-in on its own callback, and lists the tools', async () => {
    // Whatever mcp-remote uses to open a browser (BROWSER, xdg-open) lands in this recorder instead.
    const opened = join(dir, 'opened.txt');
    const recorder = join(dir, 'xdg-open');
    writeFileSync(recorder, `#!/bin/sh\necho "$1" >> "${opened}"\n`);
    chmodSync(recorder, 0o755);

    const callbackPort = await freePort();
    let stderr = '';
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [mcpRemoteBin(), `${service.url}/mcp`, String(callbackPort), '--transport', 'http-only'],
      env: {
        PATH: `${dir}:${process.env.PATH}`,
        HOME: dir,
        MCP_REMOTE_CONFIG_DIR: join(dir, 'auth'),
        BROWSER: recorder,
        DISPLAY: '',
      },
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });

    const client = new Client({ name: 'stdio-client', version: '1.0.0' });
    const connecting = client.connect(transport);
    try {
      // mcp-remote meets the 401, registers, and prints where the user must go.
      await expect
        .poll(() => /Please authorize this client by visiting:\s*(\S+)/.exec(stderr)?.[1], {
          timeout: 30_000,
        })
        .toBeTruthy();
      const authorizationUrl = new URL(/Please authorize this client by visiting:\s*(\S+)/.exec(stderr)![1]!);
      expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${service.url}/oauth/authorize`);
      expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
      const redirectUri = authorizationUrl.searchParams.get('redirect_uri')!;
      expect(new URL(redirectUri).port).toBe(String(callbackPort));

      await signInAndApprove(browser, authorizationUrl.toString(), 'remoteuser', redirectUri);
      await connecting;

      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(['list_accounts', 'list_projects', 'create_project']),
      );
      const accounts = await client.callTool({ name: 'list_accounts', arguments: {} });
      expect(JSON.stringify(accounts.structuredContent)).toContain('"handle":"remoteuser"');
    } catch (error) {
      throw new Error(`${error}\n--- mcp-remote stderr ---\n${stderr}`);
    } finally {
      await client.close();
    }
  }, 90_000);
});
