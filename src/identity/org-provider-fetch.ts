// An organization's identity provider is set by that organization's admins, and anyone can create an
// organization and verify a domain: the issuer URL, and every endpoint its discovery document names, are a
// stranger's choice that our server then connects to. So every request openid-client makes for such a
// provider (discovery, the token endpoint, JWKS, userinfo) goes through this fetch, given to openid-client
// through its customFetch hook: the address guard (src/lib/address-guard.ts, the same rules as client ID
// metadata documents) on every request, DNS answers included, and a connection pinned to the vetted address
// that never follows a redirect. The providers the operator configures (GitHub, Google, OIDC_ISSUER) are
// trusted configuration and use the plain fetch: see providers.ts.
import type { CustomFetch } from 'openid-client';
import type { Config } from '../config/index.ts';
import { type AddressPolicy, allowedNetworks, OutboundRefused, vetAddress } from '../lib/address-guard.ts';
import { pinnedFetch } from '../lib/pinned-fetch.ts';

/**
 * openid-client's own timeout (10 s, providers.ts) still applies; this one bounds a request whatever the
 * caller. Discovery documents, key sets and token answers are a few KB: 256 KB leaves room for a large key
 * set and stops a provider from making us read without end.
 */
const LIMITS = { timeoutMs: 10_000, maxBytes: 256 * 1024 };

/**
 * Public addresses; the operator's ORG_IDP_ALLOWED_NETWORKS (a self-hosted installation whose organizations
 * run their providers on its private network); and, outside production, loopback, where the tests and a
 * developer run their provider.
 */
function orgProviderPolicy(config: Config): AddressPolicy {
  return {
    allowLoopback: config.nodeEnv !== 'production',
    allowedNetworks: allowedNetworks(config.orgIdpAllowedNetworks),
  };
}

/** One fetch per configuration: providers.ts caches discovered providers by the fetch they were made with. */
const fetches = new WeakMap<Config, CustomFetch>();

/** The fetch openid-client uses for an organization's provider (its customFetch). */
export function orgProviderFetch(config: Config): CustomFetch {
  let fetch = fetches.get(config);
  if (!fetch) {
    const policy = orgProviderPolicy(config);
    fetch = async (input, options) => {
      const url = new URL(input);
      return pinnedFetch(url, await vetAddress(url, policy), options, LIMITS);
    };
    fetches.set(config, fetch);
  }
  return fetch;
}

/** The guard's refusal behind an error openid-client raised (it wraps what a fetch throws), if any. */
export function guardRefusal(error: unknown): OutboundRefused | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof OutboundRefused) return current;
    current = current.cause;
  }
  return undefined;
}
