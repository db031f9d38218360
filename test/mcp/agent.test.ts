// Spec 4.6, as a coding agent lives it, with nothing pre-registered: the MCP TypeScript SDK client with its
// own OAuthClientProvider meets a 401, reads the protected resource metadata and the authorization server
// metadata, registers itself, sends the user's browser (headless chromium) through sign-in and consent with
// PKCE S256 and `resource`, receives the code on a temporary loopback listener, exchanges it, and then uses
// the MCP server with the access token.

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import { describe, expect, it } from 'vitest';
import * as sdk from '../../generated/sdk/index.ts';
import { hasChromium } from '../support/environment.ts';
import { sdkClient } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { useChromium, useLoopbackCallback, useService } from '../support/suite.ts';
import { InMemoryOAuthProvider, issueToken, recordingFetch, signInAndApprove } from './helpers.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const browser = useChromium();
const loopback = useLoopbackCallback();
const callbacks = loopback.received;

/** An agent's OAuth state, kept in memory: what a real agent would keep in its credential store. */
class AgentOAuthProvider extends InMemoryOAuthProvider {
  get redirectUrl() {
    return loopback.uri;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test Agent',
      redirect_uris: [loopback.uri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
}

describe.skipIf(!hasChromium)('an agent connects with OAuth (spec 4.6)', () => {
  it('discovers, registers, signs the user in through the browser, and creates a project', async () => {
    const provider = new AgentOAuthProvider('agent-state');
    const requests: string[] = [];
    const mcpUrl = new URL(`${service.url}/mcp`);
    const transport = () =>
      new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: recordingFetch(requests) });

    // 1. No token yet: the first request is challenged, and the SDK runs discovery and registration,
    //    then hands the authorization URL to the agent to open in the browser.
    const first = new Client({ name: 'test-agent', version: '1.0.0' });
    const firstTransport = transport();
    await expect(first.connect(firstTransport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(requests).toEqual([
      'POST /mcp 401',
      'GET /.well-known/oauth-protected-resource/mcp 200',
      'GET /.well-known/oauth-authorization-server 200',
      'POST /oauth/register 201',
    ]);
    expect(provider.client?.client_id).toBeTruthy();

    const authorization = provider.authorizationUrl!;
    expect(authorization.origin + authorization.pathname).toBe(`${service.url}/oauth/authorize`);
    expect(authorization.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorization.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(authorization.searchParams.get('resource')).toBe(`${service.url}/mcp`);
    expect(authorization.searchParams.get('redirect_uri')).toBe(loopback.uri);
    expect(authorization.searchParams.get('scope')).toContain('project:write');

    // 2. The user signs in and approves in the browser; the redirect reaches the loopback listener.
    await signInAndApprove(browser, authorization.toString(), 'agentuser', loopback.uri);
    expect(callbacks).toHaveLength(1);
    expect(callbacks[0]!.searchParams.get('state')).toBe('agent-state');
    const code = callbacks[0]!.searchParams.get('code')!;

    // 3. Code for tokens (PKCE verifier, same resource), then every MCP request carries the access token.
    await firstTransport.finishAuth(code);
    expect(requests.at(-1)).toBe('POST /oauth/token 200');
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.token_type.toLowerCase()).toBe('bearer');

    const agent = new Client({ name: 'test-agent', version: '1.0.0' });
    await agent.connect(transport());
    try {
      const { tools } = await agent.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_accounts', 'create_project']));

      const accounts = await agent.callTool({ name: 'list_accounts', arguments: {} });
      const handles = (accounts.structuredContent as { items: { handle: string }[] }).items.map(
        (a) => a.handle,
      );
      expect(handles).toEqual(['agentuser']);

      const created = await agent.callTool({
        name: 'create_project',
        arguments: { account: 'agentuser', handle: 'from-agent', name: 'From the agent', sourceLocale: 'en' },
      });
      expect(created.isError).toBeFalsy();
      expect(created.structuredContent).toMatchObject({ account: 'agentuser', handle: 'from-agent' });
    } finally {
      await agent.close();
    }
    expect(requests.filter((r) => r.startsWith('POST /mcp')).slice(1)).not.toContain('POST /mcp 401');

    // 4. The project exists for the REST API too (with an account token: OAuth tokens are bound to /mcp).
    const restToken = await issueToken(service, 'agentuser', ['project:read']);
    const rest = await sdk.getProject({
      client: sdkClient(service, restToken),
      path: { account: 'agentuser', project: 'from-agent' },
    });
    expect(rest.response.status).toBe(200);
    expect(rest.data?.name).toBe('From the agent');

    // The MCP access token is not an API token: its audience is the MCP server.
    const viaApi = await sdk.listProjects({
      client: sdkClient(service, provider.saved!.access_token),
      path: { account: 'agentuser' },
    });
    expect(viaApi.response.status).toBe(401);
  });
});
