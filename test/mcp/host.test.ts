// The Host header is the client's to write, and nothing at /mcp depends on it: the MCP SDK's adapter built
// the web Request's URL from it, so a Host that is no valid authority (`a b`) made a tools/list a 500.
// fetch() always sends the Host of its URL, so these requests are written byte by byte on a socket.

import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useService, useUsers } from '../support/suite.ts';

const service = useService();
const { ada } = useUsers(service, 'ada');

const MALFORMED_HOSTS = ['a b', '[::1', 'x:y:z', '%', 'a:99999999', 'evil.example'];

/** Whether `text` holds a whole response: its Content-Length of body, or a chunked body's last chunk. */
function complete(text: string): boolean {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return false;
  const head = text.slice(0, split).toLowerCase();
  const body = text.slice(split + 4);
  const length = /content-length: *(\d+)/.exec(head);
  if (length) return Buffer.byteLength(body) >= Number(length[1]);
  return /transfer-encoding: *chunked/.test(head) ? body.endsWith('0\r\n\r\n') : false;
}

/**
 * One POST /mcp exactly as written, on a connection of its own: the status and the whole response. Read
 * until the response is complete, not until the connection closes: an event-stream answer keeps it open.
 */
async function rawPost(host: string, headers: Record<string, string>, body: string) {
  const socket = connect(service.port, '127.0.0.1');
  let text = '';
  const done = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (complete(text)) resolve();
    });
    socket.once('close', () => resolve());
    socket.once('error', reject);
  });
  const lines = Object.entries({
    Host: host,
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    Authorization: `Bearer ${ada.token}`,
    ...headers,
  }).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.write(`POST /mcp HTTP/1.1\r\n${lines.join('')}\r\n${body}`);
  await done;
  socket.destroy();
  return { status: Number(text.split(' ')[1]), text };
}

describe('/mcp whatever Host a client sends', () => {
  for (const host of MALFORMED_HOSTS) {
    it(`answers tools/list (through the SDK) and a tools/call (directly) with Host "${host}"`, async () => {
      const listed = await rawPost(
        host,
        { Accept: 'application/json, text/event-stream', 'Mcp-Protocol-Version': '2025-06-18' },
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      );
      expect(listed.status).toBe(200);
      expect(listed.text).toContain('"list_accounts"');

      const called = await rawPost(
        host,
        { Accept: 'application/json, text/event-stream', 'Mcp-Protocol-Version': '2025-06-18' },
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'list_accounts', arguments: {} },
        }),
      );
      expect(called.status).toBe(200);
      expect(called.text).toContain('ada');
    });
  }
});
