import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import type { Scope } from '../../src/authz/scopes.ts';
import { Account } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import type { TestService } from '../support/service.ts';

export const MODERN_REVISION = '2026-07-28';

/** The v2 SDK client pinned to the 2026-07-28 revision (no fallback), with a bearer token. */
export async function modernClient(service: { url: string }, token: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'l10n-test-v2', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: MODERN_REVISION } } },
  );
  await client.connect(
    new ModernTransport(new URL(`${service.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/**
 * A v1 SDK (`@modelcontextprotocol/sdk` 1.x) client: the 2025-era initialize handshake at `protocolVersion`
 * (its latest, 2025-11-25, unless told), served on the legacy path.
 */
export async function mcpClient(
  service: { url: string },
  token?: string,
  protocolVersion?: string,
): Promise<Client> {
  const client = new Client({ name: 'l10n-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${service.url}/mcp`), {
    requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : {},
  });
  if (protocolVersion) {
    // The v1 client always offers its latest revision; an older client is one whose initialize offers less.
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if ('method' in message && message.method === 'initialize' && message.params) {
        message = { ...message, params: { ...message.params, protocolVersion } };
      }
      return send(message, options);
    };
  }
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

/**
 * A raw JSON-RPC POST to /mcp, for what the SDK client hides (status codes, headers); a string body is sent
 * as it is (malformed or deeply nested JSON), anything else as JSON.
 */
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
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A 2026-07-28 request: the `_meta` envelope in the body and the Mcp-Method (and Mcp-Name) headers. */
export function postModern(
  service: { url: string },
  message: { id?: number; method: string; params?: Record<string, unknown> },
  headers: Record<string, string> = {},
): Promise<Response> {
  const params = message.params ?? {};
  const name: Record<string, string> = typeof params.name === 'string' ? { 'Mcp-Name': params.name } : {};
  return fetch(`${service.url}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Mcp-Protocol-Version': MODERN_REVISION,
      'Mcp-Method': message.method,
      ...name,
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: message.id ?? 1,
      method: message.method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN_REVISION,
          'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
          ...(params._meta as object | undefined),
        },
      },
    }),
  });
}

export interface ToolProblem {
  status: number;
  detail?: string;
  errors?: { pointer: string; message: string }[];
}

/** The problem details a tool error carries as its text; throws when the result is not a tool error. */
export function toolProblemOf(result: object): ToolProblem {
  const { isError, content } = result as { isError?: unknown; content?: unknown };
  const [first] = (content ?? []) as { type: string; text?: string }[];
  if (isError !== true || first?.type !== 'text')
    throw new Error(`not a tool error: ${JSON.stringify(result)}`);
  return JSON.parse(first.text!) as ToolProblem;
}

/** The JSON-RPC message of a response, whether sent as JSON or as one SSE `message` event. */
// biome-ignore lint/suspicious/noExplicitAny: a JSON-RPC answer, read by tests as the shape they expect
export async function jsonRpcOf(response: Response): Promise<Record<string, any>> {
  return JSON.parse(jsonRpcTextOf(await response.text(), response.headers.get('content-type')));
}

/** The JSON text of a response body: the body itself, or the data of its last SSE `message` event. */
export function jsonRpcTextOf(body: string, contentType: string | null): string {
  if (!(contentType ?? '').includes('text/event-stream')) return body;
  const data = body
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim())
    .filter(Boolean);
  return data.at(-1) ?? '';
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

/**
 * An agent's OAuth state kept in memory, as a real agent keeps it in its credential store: everything the
 * SDK client's OAuthClientProvider needs but who the agent is (its redirect URL and metadata), which each
 * agent test says in a subclass. It answers `state()` with the state it is made with, and keeps the authorization URL
 * the SDK hands over for the test to open in a browser.
 */
export abstract class InMemoryOAuthProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;

  readonly #state: string;

  constructor(state: string) {
    this.#state = state;
  }

  abstract get redirectUrl(): string;
  abstract get clientMetadata(): OAuthClientMetadata;

  state() {
    return this.#state;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A fetch that notes "METHOD /path status" of every request in `requests`: the agent's conversation, to assert on. */
export function recordingFetch(requests: string[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    const response = await fetch(input, init);
    requests.push(`${init?.method ?? 'GET'} ${url.pathname} ${response.status}`);
    return response;
  };
}
