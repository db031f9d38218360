// Client ID Metadata Documents: a client names itself by an https URL (its `client_id`), and we fetch the
// JSON document there to learn its name and redirect URIs. That fetch is a request our server makes to an
// address a stranger chose, so it goes through the address guard (src/lib/address-guard.ts: only public
// addresses, every DNS answer checked) and a connection pinned to the checked address
// (src/lib/pinned-fetch.ts) rather than a plain fetch. On top of those: https only, no redirects, a short
// timeout, and (in provider.ts) a small size limit and bounded caching.
import { OutboundRefused, type VettedAddress, vetAddress } from '../lib/address-guard.ts';
import { pinnedFetch } from '../lib/pinned-fetch.ts';

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

/** The one address to connect to for `url`, or an OutboundRefused saying why. */
export async function vettedAddress(url: URL, policy: DocumentFetchPolicy): Promise<VettedAddress> {
  const vetted = await vetAddress(url, { allowLoopback: policy.allowLoopback });
  // Plain http only to a developer's own server (loopback, outside production).
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && vetted.local)) {
    throw new OutboundRefused(
      `${url.protocol} is not allowed; a client ID metadata document is served over https`,
    );
  }
  return vetted;
}

/**
 * A fetch for oidc-provider's `fetch` setting, used for client ID metadata documents: a GET to the vetted,
 * pinned address that never follows a redirect (any status but 200 comes back without its body, and the
 * provider then refuses it), bounded by `timeoutMs` and `maxBytes`.
 */
export function guardedFetch(
  policy: DocumentFetchPolicy,
  adjust: (document: Record<string, unknown>) => void = () => {},
) {
  return async (input: string | URL, init: { headers?: HeadersInit; signal?: AbortSignal | null } = {}) => {
    const url = new URL(String(input));
    const response = await pinnedFetch(
      url,
      await vettedAddress(url, policy),
      { method: 'GET', headers: init.headers as Record<string, string> | undefined, signal: init.signal },
      policy,
    );
    if (response.status !== 200) return new Response(null, { status: response.status });
    // The document's metadata gets the adjustments a registered client's gets (`adjust`); what is not a
    // JSON object goes on as it came, for oidc-provider to refuse. The headers stay: they say how long
    // the document may be cached.
    const text = await response.text();
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch {
      return new Response(text, { status: 200, headers: response.headers });
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document))
      return new Response(text, { status: 200, headers: response.headers });
    adjust(document as Record<string, unknown>);
    return new Response(JSON.stringify(document), { status: 200, headers: response.headers });
  };
}
