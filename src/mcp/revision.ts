import {
  JSONRPC_VERSION,
  PROTOCOL_VERSION_META_KEY,
  ProtocolErrorCode,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import type { JsonRpcId } from './unavailable.ts';

// The revisions /mcp serves, and the one answer for a request that names another in its
// Mcp-Protocol-Version header. The SDK sorts a header it does not know by comparing it as text with
// 2026-07-28, so `banana` (after "2" in that order) was told its request lacked the 2026-07-28 envelope, and
// 2024-01-01 got a -32000 without the request's id. Every unknown revision now gets MCP's own error for it,
// -32022 with the revisions we serve, so an agent can pick one from the error alone. A request whose body
// claims a revision in its `_meta` envelope is left to the SDK, which answers an unknown one with -32022 too,
// naming the modern revisions its server/discover lists (a 2026-07-28 client must find the two agree).

/** The stateless revision of the SDK's modern path, then the 2025 (and 2024) ones of its legacy path. */
const SERVED_REVISIONS: readonly string[] = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS];

/**
 * What a request's Mcp-Protocol-Version header names, read as leniently as it can be without guessing: a
 * revision given twice (a proxy repeating the header) is that revision, and an empty value is no header
 * (read as 2025-03-26). `unserved` is a revision the door does not serve, in a request whose body claims
 * none (that one is the SDK's to check); `served` is the value to hand the SDK, undefined for none.
 */
export function readRevisionHeader(
  header: string | string[] | undefined,
  body: unknown,
): { served: string | undefined } | { unserved: string } {
  if (header === undefined) return { served: undefined };
  // Repeated headers arrive joined (or as an array). HTTP's optional whitespace around a value is not part
  // of it, as the SDK reads it too.
  const values = [...new Set((Array.isArray(header) ? header.join(',') : header).split(',').map(trimOws))];
  const revision = values.length === 1 ? values[0]! : values.join(', ');
  if (revision === '') return { served: undefined };
  if (SERVED_REVISIONS.includes(revision) || claimsRevision(body)) return { served: revision };
  return { unserved: revision };
}

const trimOws = (value: string) => value.replace(/^[ \t]+|[ \t]+$/g, '');

function claimsRevision(body: unknown): boolean {
  const meta = (body as { params?: { _meta?: unknown } } | null)?.params?._meta;
  return typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META_KEY in meta;
}

/** HTTP 400 with the JSON-RPC error MCP defines for a revision the server does not support. */
export function unservedRevisionAnswer(id: JsonRpcId, requested: string) {
  return {
    status: 400,
    body: {
      jsonrpc: JSONRPC_VERSION,
      id,
      error: {
        code: ProtocolErrorCode.UnsupportedProtocolVersion,
        message: `Unsupported protocol version: ${quoted(requested)}. This server serves ${SERVED_REVISIONS.join(', ')}.`,
        data: { supported: SERVED_REVISIONS, requested },
      },
    },
  };
}

/** The requested revision as the message shows it: a header can be 16 kB, which `data.requested` holds whole. */
function quoted(requested: string): string {
  return requested.length > 40 ? `${requested.slice(0, 40)}…` : requested;
}
