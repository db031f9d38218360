// oidc-provider configured as this service's OAuth 2.1 authorization server: authorization code with
// PKCE S256 only, refresh tokens with rotation, open dynamic registration, opaque access tokens bound
// to one of our two resources. Decisions are explained in docs/oauth.md.
import Provider, {
  type Configuration,
  errors,
  interactionPolicy,
  type KoaContextWithOIDC,
} from 'oidc-provider';
import type { ServiceContext } from '../app.ts';
import { ALL_SCOPES } from '../authz/scopes.ts';
import { User } from '../db/entities/index.ts';
import type { Sessions } from '../identity/sessions.ts';
import { createAdapterFactory } from './adapter.ts';
import { findRememberedGrantId } from './connected-apps.ts';
import { errorPage } from './pages.ts';
import { canonicalResource, defaultResource } from './resources.ts';

export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  introspection: '/oauth/introspect',
  jwks: '/oauth/jwks',
} as const;

export const INTERACTION_PATH = '/oauth/interaction';

/** Lifetimes in seconds. */
export const TTL = {
  AccessToken: 60 * 60,
  AuthorizationCode: 60,
  RefreshToken: 30 * 24 * 60 * 60,
  Grant: 365 * 24 * 60 * 60,
  Session: 14 * 24 * 60 * 60,
  Interaction: 60 * 60,
} as const;

/** A rotated refresh token keeps working this long, so two parallel refreshes do not revoke the grant. */
export const REFRESH_GRACE_SECONDS = 10;

export function createProvider(ctx: ServiceContext, sessions: Sessions): Provider {
  const { config, orm } = ctx;
  const signingAlg = (config.signingJwks.keys[0]?.alg ?? 'ES256') as 'ES256';

  const configuration: Configuration = {
    adapter: createAdapterFactory({ orm, cipher: ctx.cipher, refreshGraceSeconds: REFRESH_GRACE_SECONDS }),
    // No built-in clients: our own pages use the browser session (src/identity), not OAuth.
    clients: [],
    jwks: config.signingJwks as Configuration['jwks'],
    cookies: {
      keys: config.cookieKeys,
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    routes: OAUTH_ROUTES,
    responseTypes: ['code'],
    // No OpenID Connect: the scopes are ours and carried by resource servers; `openid` is not offered.
    scopes: ['offline_access'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: signingAlg,
    },
    allowOmittingSingleRegisteredRedirectUri: false,
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      deviceFlow: { enabled: false },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      revocation: {
        enabled: true,
        // A client revokes only its own tokens.
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      introspection: {
        enabled: true,
        // Only the client a token was issued to may introspect it.
        allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => {
          if (!oneOf) return defaultResource(config.baseUrl);
          return (
            oneOf.find((r) => canonicalResource(r, config.baseUrl) === defaultResource(config.baseUrl)) ??
            oneOf[0]!
          );
        },
        // A token request without `resource` gets the resource that was granted.
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          const audience = canonicalResource(indicator, config.baseUrl);
          if (!audience) throw new errors.InvalidTarget('unknown resource indicator');
          return {
            scope: ALL_SCOPES.join(' '),
            audience,
            accessTokenFormat: 'opaque',
            accessTokenTTL: TTL.AccessToken,
          };
        },
      },
    },
    // Refresh tokens do not need `offline_access` and outlive the browser session.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    expiresWithSession: () => false,
    rotateRefreshToken: rotateRefreshTokenUnlessMismatched,
    ttl: {
      AccessToken: TTL.AccessToken,
      AuthorizationCode: TTL.AuthorizationCode,
      RefreshToken: TTL.RefreshToken,
      Grant: TTL.Grant,
      Session: TTL.Session,
      Interaction: TTL.Interaction,
    },
    interactions: {
      url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
      policy: interactionPolicyWithRememberedConsent(sessions),
    },
    loadExistingGrant: async (koa) => {
      const { oidc } = koa;
      const grantId = oidc.result?.consent?.grantId ?? oidc.session?.grantIdFor(oidc.client!.clientId);
      const fromSession = grantId ? await oidc.provider.Grant.find(grantId) : undefined;
      if (fromSession || !oidc.session?.accountId) return fromSession;
      const remembered = await findRememberedGrantId(orm, oidc.session.accountId, oidc.client!.clientId);
      return remembered ? oidc.provider.Grant.find(remembered) : undefined;
    },
    findAccount: async (_koa, sub) => {
      const user = await orm.em.fork().findOne(User, { id: sub });
      if (!user) return undefined;
      return { accountId: sub, claims: () => ({ sub }) };
    },
    renderError: (koa, out) => {
      koa.type = 'html';
      koa.body = errorPage(out.error ?? 'server_error', out.error_description);
    },
  };

  const provider = new Provider(config.baseUrl, configuration);
  // Behind a load balancer, X-Forwarded-Proto decides whether cookies are Secure and URLs https.
  provider.proxy = Boolean(config.trustProxy);
  return provider;
}

/**
 * Always rotate, but first refuse a `resource` the refresh token was not granted for: oidc-provider
 * checks the resource only after consuming the old token, which would burn it for a client mistake.
 */
function rotateRefreshTokenUnlessMismatched(koa: KoaContextWithOIDC): boolean {
  const requested = koa.oidc.params?.resource as string | string[] | undefined;
  const refreshToken = koa.oidc.entities.RefreshToken;
  if (requested !== undefined && refreshToken) {
    const granted = refreshToken.resourceIndicators as Set<string>;
    for (const indicator of Array.isArray(requested) ? requested : [requested]) {
      if (!granted.has(indicator))
        throw new errors.InvalidTarget('resource was not granted to this refresh token');
    }
  }
  return true;
}

/**
 * The default policy, minus "native clients always see the consent page": consent is remembered per user
 * and client (docs/oauth.md explains the trade-off), and only newly requested scopes are asked for.
 */
function interactionPolicyWithRememberedConsent(sessions: Sessions) {
  const policy = interactionPolicy.base();
  const consent = policy.get('consent');
  consent?.checks.remove('native_client_prompt');
  // The browser session of this service decides who is signed in: an authorization-server session whose
  // person has signed out here (or signed in as someone else since) asks for sign-in again.
  policy.get('login')?.checks.add(
    new interactionPolicy.Check('browser_session', 'End-User authentication is required', async (koa) => {
      const who = await sessions.current(koa.req);
      return who?.userId === koa.oidc.session?.accountId
        ? interactionPolicy.Check.NO_NEED_TO_PROMPT
        : interactionPolicy.Check.REQUEST_PROMPT;
    }),
  );
  return policy;
}
