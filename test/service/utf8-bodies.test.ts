// A body whose bytes are not UTF-8 (a Latin-1 é, an overlong sequence, an encoded surrogate) is refused with
// a 400 in each door's format and changes nothing: read anyway, the decoders would have saved U+FFFD, or a
// form's undecodable `%E9` as the text "%E9", in place of what the client sent.
import { describe, expect, it } from 'vitest';
import { csrfOf, postForm, signedInJar, sql } from '../oauth/helpers.ts';
import { startTestService } from '../support/service.ts';
import { useService, useUsers } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));
const { ada } = useUsers(service, 'ada');

/** `{"handle":…,"name":"caf<bytes>",…}` with `bytes` where the name's é should be. */
const projectWith = (handle: string, bytes: number[]) =>
  Buffer.concat([
    Buffer.from(`{"handle":"${handle}","name":"caf`),
    Buffer.from(bytes),
    Buffer.from('","sourceLocale":"en"}'),
  ]);

const NOT_UTF8 = [[0xe9], [0xc0, 0xaf], [0xed, 0xa0, 0x80]];

describe('bodies that are not UTF-8', () => {
  it('are refused over REST and MCP, and nothing is created', async () => {
    for (const [i, bytes] of NOT_UTF8.entries()) {
      const rest = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ada.token}`, 'content-type': 'application/json' },
        body: new Uint8Array(projectWith(`rest${i}`, bytes)),
      });
      expect(rest.status).toBe(400);
      expect(await rest.json()).toMatchObject({
        detail: 'The body is not valid UTF-8.',
        errors: [{ pointer: '/body' }],
      });

      const call = Buffer.concat([
        Buffer.from(
          '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_project","arguments":',
        ),
        projectWith(`mcp${i}`, bytes).subarray(0, -1),
        Buffer.from(',"account":"ada"}}}'),
      ]);
      const mcp = await fetch(`${service.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ada.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: new Uint8Array(call),
      });
      expect(mcp.status).toBe(400);
      expect((await mcp.json()).error).toMatchObject({
        code: -32700,
        message: 'The body is not valid UTF-8.',
      });
    }
    expect(await sql(service, `select handle from projects where handle ~ '^(rest|mcp)[0-9]$'`)).toEqual([]);
  });

  it('are refused at the OAuth endpoints in their error format', async () => {
    const register = await fetch(`${service.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array(
        Buffer.concat([
          Buffer.from('{"client_name":"caf'),
          Buffer.from([0xe9]),
          Buffer.from('","redirect_uris":["http://127.0.0.1:9/cb"]}'),
        ]),
      ),
    });
    expect(register.status).toBe(400);
    expect(await register.json()).toEqual({
      error: 'invalid_request',
      error_description: 'The body is not valid UTF-8.',
    });
    const token = await fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=refresh_token&refresh_token=caf%E9',
    });
    expect(token.status).toBe(400);
    expect((await token.json()).error).toBe('invalid_request');
  });

  it('are refused in a page form, where an undecodable escape (%E9) would have been saved as text', async () => {
    const jar = await signedInJar(service, 'formenc');
    const page = await (await jar.fetch(`${service.url}/settings/profile`)).text();
    const csrf = csrfOf(page.slice(page.indexOf('action="/settings/profile"')));
    const response = await jar.fetch(`${service.url}/settings/profile`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${encodeURIComponent(csrf)}&displayName=caf%E9`,
    });
    expect(response.status).toBe(400);
    // The same form in UTF-8 goes through.
    const saved = await postForm(jar, `${service.url}/settings/profile`, { csrf, displayName: 'café' });
    expect(saved.status).toBe(303);
    expect(await sql(service, `select display_name from users where display_name like 'caf%'`)).toEqual([
      { display_name: 'café' },
    ]);
  });
});
