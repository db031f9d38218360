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

// Only globally routable unicast addresses are fetched from. The lists below are net.BlockList, Node's own
// address matcher, so addresses in any spelling (::ffff:a00:1, ::ffff:10.0.0.1) are compared as numbers,
// not as text; BlockList also matches an IPv4-mapped address against the IPv4 rules, which is how the
// mapped form is judged by its IPv4 address.

/** IPv4 networks that are not globally reachable (IANA's IPv4 special-purpose registry, and multicast). */
const NON_PUBLIC_V4 = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (CGNAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services live here)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast, deprecated
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const;

/**
 * IPv6 is judged by what IANA handed out rather than by a list of what to avoid: an address must be global
 * unicast (2000::/3). So everything else is refused without being named: loopback, unspecified, unique-local,
 * link-local, site-local, multicast, the discard-only and SRv6 prefixes, future allocations, and three forms
 * that carry an IPv4 address but have no business on the public internet: IPv4-compatible ::a.b.c.d
 * (deprecated; old stacks send it to the IPv4 host through an automatic tunnel), IPv4-translated
 * ::ffff:0:a.b.c.d (SIIT) and local-use NAT64 64:ff9b:1::/48 (a network's own translator, where the IPv4
 * address may sit anywhere in the address). Two IPv4-carrying forms are admitted to be judged by their
 * IPv4 address instead, because on the wire they reach exactly that IPv4 host: IPv4-mapped ::ffff:a.b.c.d
 * (the socket itself connects over IPv4) and the well-known NAT64 prefix 64:ff9b::a.b.c.d (the network's
 * translator does; on an IPv6-only network with DNS64 every IPv4-only host resolves to this form, so refusing
 * it outright would refuse every such document).
 */
const ROUTABLE_V6 = new BlockList();
ROUTABLE_V6.addSubnet('2000::', 3, 'ipv6');
ROUTABLE_V6.addSubnet('::ffff:0:0', 96, 'ipv6');
ROUTABLE_V6.addSubnet('64:ff9b::', 96, 'ipv6');

/** What is refused among the addresses above: IPv4 networks, and special-purpose blocks inside 2000::/3. */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of NON_PUBLIC_V4) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
  // The same network behind the well-known NAT64 prefix: 64:ff9b::7f00:1 is 127.0.0.1.
  NON_PUBLIC.addSubnet(`64:ff9b::${network}`, 96 + prefix, 'ipv6');
}
for (const [network, prefix] of [
  // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID, anycast and AMT relays. None of
  // them is a web server, and Teredo's embedded IPv4 addresses are a relay and an obfuscated client, not
  // the host reached, so the whole block is refused rather than judged.
  ['2001::', 23],
  ['2001:db8::', 32], // documentation
  // 6to4: the embedded IPv4 address is the site's relay router, not the host; retired (RFC 7526).
  ['2002::', 16],
  ['3fff::', 20], // documentation
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `::ffff:10.0.0.1` is 10.0.0.1 on the wire: connected to over IPv4. */
function unmapped(address: string): { address: string; family: 4 | 6 } {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1]!, family: 4 };
  return { address, family: isIP(address) === 6 ? 6 : 4 };
}

const familyOf = (address: string) => (isIP(address) === 6 ? 'ipv6' : 'ipv4');
const inList = (list: BlockList, address: string) => list.check(address, familyOf(address));

/** Globally routable unicast; an address carrying an IPv4 address is judged by it or refused (see above). */
const isPublic = (address: string) =>
  !inList(NON_PUBLIC, address) && (familyOf(address) === 'ipv4' || inList(ROUTABLE_V6, address));

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
  const internal = resolved.find(({ address }) => !isPublic(address));
  if (internal && !local) {
    throw new DocumentFetchRefused(`${hostname} resolves to ${internal.address}, not a public address`);
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
