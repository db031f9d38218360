// Work e-mail domains of organizations: which may be claimed (not a public suffix, not a public e-mail
// provider), the DNS TXT record that proves control, and the lookup that checks it. The DNS servers asked
// are configurable (DNS_SERVERS) so a test, or a split-horizon setup, can point at its own.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { domainToASCII } from 'node:url';
import { onFirstUse } from '../lib/on-first-use.ts';

/** The record goes under this label, so it does not crowd the domain's own TXT records. */
const TXT_LABEL = '_l10n-verification';
const TXT_PREFIX = 'l10n-verification=';

// Both lists are needed only when someone claims a domain. The public e-mail providers' is big: 2 MB of
// source and a Set of its domains, about a tenth of the service's heap after start.
const tldts = onFirstUse<typeof import('tldts')>('tldts');
const freeEmailDomains = onFirstUse<typeof import('free-email-domains-list')>('free-email-domains-list');
const isFreeEmailDomain = (domain: string): boolean => freeEmailDomains().DOMAINS.has(domain);

/**
 * A domain in lower case and its ASCII (punycode) form, the form domains are claimed and verified in:
 * bücher.example is xn--bcher-kva.example. Text that is no domain name stays as it is (lowered), for the
 * checks after it to refuse.
 */
export function asciiDomain(domain: string): string {
  const lowered = domain.toLowerCase();
  // domainToASCII reads its input as a URL's host: it stops at / ? # and decodes %41, so a pasted URL or an
  // escape would claim another domain than the one typed (corp.example%41 as corp.examplea). Such text is
  // no domain name: left as it is, for the checks after it to refuse.
  if (/[/?#%@:\\\s[\]]/.test(lowered)) return lowered;
  return domainToASCII(lowered) || lowered;
}

/**
 * An e-mail address lowered, with its domain in ASCII (punycode), the form domains are verified in and
 * invitations are sent to: uma@bücher.example is uma@xn--bcher-kva.example.
 */
export function asciiEmail(email: string): string {
  const lowered = email.toLowerCase();
  const at = lowered.lastIndexOf('@');
  return at < 0 ? lowered : `${lowered.slice(0, at)}@${asciiDomain(lowered.slice(at + 1))}`;
}

/** Why this domain cannot be claimed, or undefined when it can. */
export function domainRefusal(domain: string): string | undefined {
  // Private suffixes too (github.io, herokuapp.com): nobody owns those for a whole organization.
  const info = tldts().parse(domain, { allowPrivateDomains: true });
  if (info.isIp || !info.hostname) return `${domain} is not a domain name.`;
  if (!info.domain || info.publicSuffix === domain)
    return `${domain} is a public suffix (like com or co.uk); claim your own domain under it.`;
  if (isFreeEmailDomain(domain) || isFreeEmailDomain(info.domain))
    return `${domain} is a public e-mail provider's domain; anyone can have an address there.`;
  return undefined;
}

export interface Challenge {
  /** Shown once: the TXT record to publish. */
  record: { name: string; value: string };
  /** Stored: SHA-256 of the secret part. */
  hash: Buffer;
}

export function newChallenge(domain: string): Challenge {
  const secret = randomBytes(24).toString('base64url');
  return {
    record: { name: `${TXT_LABEL}.${domain}`, value: `${TXT_PREFIX}${secret}` },
    hash: createHash('sha256').update(secret).digest(),
  };
}

/** Whether the domain publishes a TXT record whose secret hashes to `hash`. */
export async function hasChallengeRecord(
  domain: string,
  hash: Buffer,
  servers: string[] | undefined,
): Promise<boolean> {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  let records: string[][];
  try {
    records = await resolver.resolveTxt(`${TXT_LABEL}.${domain}`);
  } catch {
    return false; // no such name, no TXT record, or the server did not answer: not verified (yet)
  }
  return records
    .map((chunks) => chunks.join(''))
    .filter((value) => value.startsWith(TXT_PREFIX))
    .some((value) => {
      const presented = createHash('sha256').update(value.slice(TXT_PREFIX.length)).digest();
      return timingSafeEqual(presented, hash);
    });
}
