// Turns an OAuth access token into a Caller for the REST and MCP pipelines, in-process: the opaque
// token is looked up through oidc-provider, so a revoked token or a disconnected app is dead at once.
import type Provider from 'oidc-provider';
import type { BearerVerifier, Caller, Door } from '../authz/caller.ts';
import { isScope, type Scope } from '../authz/scopes.ts';
import { resourceFor } from './resources.ts';

export function createAccessTokenVerifier(provider: Provider): BearerVerifier {
  return async (token) => {
    // oidc-provider's opaque tokens are 43 base64url characters; anything else is not ours.
    if (!/^[\w-]{20,100}$/.test(token)) return null;
    const accessToken = await provider.AccessToken.find(token);
    if (!accessToken || accessToken.isExpired || !accessToken.accountId || !accessToken.grantId) return null;
    // Revoking a grant (disconnecting the app, refresh-token replay) must kill its access tokens too.
    const grant = await provider.Grant.find(accessToken.grantId);
    if (!grant || grant.accountId !== accessToken.accountId || grant.clientId !== accessToken.clientId)
      return null;
    const audience = typeof accessToken.aud === 'string' ? accessToken.aud : undefined;
    if (!audience) return null;
    const scopes = new Set<Scope>([...accessToken.scopes].filter(isScope));
    const grantExpiresAt = grant.exp ? grant.exp * 1000 : Infinity;
    const caller: Caller = {
      userId: accessToken.accountId,
      scopes,
      // What the app creates (account tokens) lives no longer than its consent, and dies with it.
      expiresAt: grant.exp ? new Date(grant.exp * 1000) : undefined,
      validUntil: new Date(Math.min((accessToken.exp ?? 0) * 1000, grantExpiresAt)),
      oauthGrantId: accessToken.grantId,
      credential: {
        kind: 'oauth',
        clientId: accessToken.clientId!,
        grantId: accessToken.grantId,
        audience,
        tokenJti: accessToken.jti,
      },
    };
    return caller;
  };
}

/** The same verifier, accepting only tokens issued for this door's resource (RFC 8707 audience). */
export function verifierFor(verify: BearerVerifier, door: Door, baseUrl: string): BearerVerifier {
  const expected = resourceFor(door, baseUrl);
  return async (token) => {
    const caller = await verify(token);
    return caller?.credential.kind === 'oauth' && caller.credential.audience === expected ? caller : null;
  };
}
