// Which addresses the service may connect to when a URL comes from someone other than its operator (a
// client ID metadata document, an organization's identity provider). Such a request is a server-side
// request forgery waiting to happen: the stranger picks the host, and our server, inside the network,
// makes the connection. So the host is resolved once, every address it resolves to is judged, and the one
// address to connect to is handed back for the caller to pin the connection to (src/lib/pinned-fetch.ts),
// so a second DNS answer cannot swap in an internal address after the check.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

export interface AddressPolicy {
  /**
   * Outside production only: a host whose every address is loopback is accepted (a developer's or a test's
   * own server), and its certificate is not verified, since a local server's certificate is self-signed.
   */
  allowLoopback: boolean;
  /**
   * Networks accepted besides the public addresses: an operator's own private network, where a
   * self-hosted installation may run services it trusts (see allowedNetworks). Certificates are verified.
   */
  allowedNetworks?: BlockList;
}

/** The guard refused a request: its host is at an address the policy does not allow (or does not resolve). */
export class OutboundRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

// Only globally routable unicast addresses are accepted. The lists below are net.BlockList, Node's own
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
 * it outright would refuse every such host).
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

/**
 * The networks of an operator's setting (`10.20.0.0/16`, `fd00:1234::/32`: checked and spelled out by
 * src/config), as a matcher for AddressPolicy.allowedNetworks.
 */
export function allowedNetworks(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [network = '', prefix = ''] = cidr.split('/');
    list.addSubnet(network, Number(prefix), familyOf(network));
  }
  return list;
}

export interface VettedAddress {
  /** The address to connect to (an IPv4-mapped answer as its IPv4 address). */
  address: string;
  family: 4 | 6;
  /** Accepted because every answer is loopback and the policy allows that (development and tests only). */
  local: boolean;
}

/** The one address to connect to for `url`, or an OutboundRefused saying why not. */
export async function vetAddress(url: URL, policy: AddressPolicy): Promise<VettedAddress> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const resolved = isIP(hostname)
    ? [{ address: hostname, family: isIP(hostname) }]
    : await lookup(hostname, { all: true, verbatim: true }).catch(() => {
        throw new OutboundRefused(`${hostname} does not resolve`);
      });
  if (resolved.length === 0) throw new OutboundRefused(`${hostname} does not resolve`);
  const local = policy.allowLoopback && resolved.every(({ address }) => inList(LOOPBACK, address));
  // Every answer is checked, not only the first: a name with one public and one internal address is refused.
  const allowed = (address: string) =>
    isPublic(address) || (policy.allowedNetworks !== undefined && inList(policy.allowedNetworks, address));
  const internal = resolved.find(({ address }) => !allowed(address));
  if (internal && !local) {
    throw new OutboundRefused(
      internal.address === hostname
        ? `${hostname} is not a public address`
        : `${hostname} resolves to ${internal.address}, not a public address`,
    );
  }
  return { ...unmapped(resolved[0]!.address), local };
}
