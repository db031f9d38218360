// Client ID Metadata Documents: a client names itself by an https URL (its `client_id`), and we fetch the
// JSON document there to learn its name and redirect URIs. That fetch is a request our server makes to an
// address a stranger chose, so it goes through this guard rather than a plain fetch (server-side request
// forgery): the host is resolved once, every address it resolves to is checked, and the connection is
// pinned to the checked address so a second DNS answer cannot swap in an internal one. No redirects, a
// short timeout, and (in provider.ts) a small size limit and bounded caching.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export interface DocumentFetchPolicy {
  /**
   * Outside production only: documents on loopback addresses are fetched (a developer's or a test's own
   * server), without certificate verification, since a local server's certificate is self-signed.
   */
  allowLoopback: boolean;
  /** The whole fetch, connection to last byte. */
  timeoutMs: number;
  /** The largest document read; a longer one is refused without reading the rest. */
  maxBytes: number;
}

/** Addresses a metadata document must never be fetched from: private, loopback, link-local, reserved. */
const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
  ['2001:db8::', 32],
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `::ffff:10.0.0.1` is 10.0.0.1 on the wire. */
function unmapped(address: string): { address: string; family: 4 | 6 } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1]!, family: 4 };
  return { address, family: isIP(address) === 6 ? 6 : 4 };
}

const inList = (list: BlockList, address: string) => {
  const { address: plain, family } = unmapped(address);
  return list.check(plain, family === 6 ? 'ipv6' : 'ipv4');
};

export class DocumentFetchRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DocumentFetchRefused';
  }
}

/** The one address to connect to for `url`, or a refusal saying why. */
export async function vettedAddress(
  url: URL,
  policy: DocumentFetchPolicy,
): Promise<{ address: string; family: 4 | 6 }> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const resolved = isIP(hostname)
    ? [{ address: hostname, family: isIP(hostname) }]
    : await lookup(hostname, { all: true, verbatim: true }).catch(() => {
        throw new DocumentFetchRefused(`${hostname} does not resolve`);
      });
  if (resolved.length === 0) throw new DocumentFetchRefused(`${hostname} does not resolve`);
  const loopbackOnly = resolved.every(({ address }) => inList(LOOPBACK, address));
  const local = policy.allowLoopback && loopbackOnly;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) {
    throw new DocumentFetchRefused(
      `${url.protocol} is not allowed; a client ID metadata document is served over https`,
    );
  }
  // Every answer is checked, not only the first: a name with one public and one internal address is refused.
  const internal = resolved.find(({ address }) => inList(INTERNAL, address));
  if (internal && !local) {
    throw new DocumentFetchRefused(`${hostname} resolves to ${internal.address}, an internal address`);
  }
  return unmapped(resolved[0]!.address);
}

/**
 * A fetch for oidc-provider's `fetch` setting, used for client ID metadata documents: the vetted address is
 * pinned through the connection's own lookup, redirects are never followed (the provider then refuses any
 * status but 200), the whole request is bounded by `timeoutMs` and the body by `maxBytes`. The body is read
 * here, so the connection is closed before the provider parses it.
 */
export function guardedFetch(policy: DocumentFetchPolicy) {
  return async (input: string | URL, init: { headers?: HeadersInit; signal?: AbortSignal | null } = {}) => {
    const url = new URL(String(input));
    const pinned = await vettedAddress(url, policy);
    // undici (for a connection pinned to the vetted address) is loaded with the first document fetched:
    // most instances never fetch one, and it is about 1 MB of source the service would otherwise keep.
    const { Agent, fetch: undiciFetch } = await import('undici');
    const dispatcher = new Agent({
      connect: {
        lookup: (_hostname, _options, callback) => callback(null, [pinned] as never, pinned.family),
        ...(policy.allowLoopback && inList(LOOPBACK, pinned.address) ? { rejectUnauthorized: false } : {}),
      },
      connections: 1,
    });
    const signal = AbortSignal.any([
      AbortSignal.timeout(policy.timeoutMs),
      ...(init.signal ? [init.signal] : []),
    ]);
    try {
      const response = await undiciFetch(url, {
        method: 'GET',
        headers: init.headers as never,
        redirect: 'manual',
        signal,
        dispatcher,
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        return new Response(null, { status: response.status });
      }
      const declared = Number(response.headers.get('content-length') ?? 0);
      if (declared > policy.maxBytes)
        throw new DocumentFetchRefused(`the document is larger than ${policy.maxBytes} bytes`);
      const chunks: Uint8Array[] = [];
      let received = 0;
      for await (const chunk of response.body ?? []) {
        received += chunk.length;
        if (received > policy.maxBytes)
          throw new DocumentFetchRefused(`the document is larger than ${policy.maxBytes} bytes`);
        chunks.push(chunk);
      }
      return new Response(Buffer.concat(chunks), {
        status: response.status,
        headers: response.headers as never,
      });
    } finally {
      void dispatcher.destroy().catch(() => {});
    }
  };
}
