// oidc-provider configured as this service's OAuth 2.1 authorization server: authorization code with
// PKCE S256 only, refresh tokens with rotation, open dynamic registration, opaque access tokens bound
// to one of our two resources. Decisions are explained in docs/oauth.md.
import Provider, {
  type Configuration,
  errors,
  interactionPolicy,
  type KoaContextWithOIDC,
} from 'oidc-provider';
import { ALL_SCOPES } from '../authz/scopes.ts';
import type { ServiceContext } from '../context.ts';
import { User } from '../db/entities/index.ts';
import { findRememberedGrantId } from '../domain/connected-apps.ts';
import type { Sessions } from '../identity/sessions.ts';
import { allowFormActionTo } from '../lib/csp.ts';
import { errorPage } from '../web/authorization-pages.ts';
import { createAdapterFactory, readAheadAccount } from './adapter.ts';
import { guardedFetch } from './cimd.ts';
import { normalizeClientMetadata } from './normalize.ts';
import { routeProviderNotices } from './provider-notices.ts';
import { pinPublicOrigin } from './public-origin.ts';
import { createRefreshGrace } from './refresh-grace.ts';
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
const TTL = {
  AccessToken: 60 * 60,
  AuthorizationCode: 60,
  RefreshToken: 30 * 24 * 60 * 60,
  Grant: 365 * 24 * 60 * 60,
  Session: 14 * 24 * 60 * 60,
  Interaction: 60 * 60,
} as const;

/**
 * Client ID Metadata Documents: how long a fetch may take, how large a document may be, and how long a
 * fetched one is reused (its Cache-Control max-age, clamped to these bounds, which sit inside the
 * feature's own 30 s .. 1 day). A client is rarely re-fetched, and a changed document takes effect within
 * the hour.
 */
const CIMD = {
  /** The longest client_id URL accepted: the longest that disconnectApp takes (openapi.yaml). */
  maxClientIdLength: 2048,
  timeoutMs: 2000,
  maxBytes: 5 * 1024,
  cacheSeconds: { min: 60, max: 3600 },
} as const;

/** A rotated refresh token keeps working this long, so two parallel refreshes do not revoke the grant. */
const REFRESH_GRACE_SECONDS = 10;

export function createProvider(ctx: ServiceContext, sessions: Sessions): Provider {
  const { config, orm } = ctx;
  // Before the provider exists: its constructor may already write a notice.
  routeProviderNotices(ctx.logger);
  const signingAlg = (config.signingJwks.keys[0]?.alg ?? 'ES256') as 'ES256';

  const refreshGrace = createRefreshGrace(orm, ctx.cipher, ctx.runPrepared);
  const configuration: Configuration = {
    adapter: createAdapterFactory({
      orm,
      runPrepared: ctx.runPrepared,
      cipher: ctx.cipher,
      refreshGraceSeconds: REFRESH_GRACE_SECONDS,
      rotation: refreshGrace,
    }),
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
    // Every outgoing request of the provider (today only client ID metadata documents) is guarded.
    fetch: guardedFetch(
      { allowLoopback: config.cimdAllowLoopback, timeoutMs: CIMD.timeoutMs, maxBytes: CIMD.maxBytes },
      (document) => normalizeClientMetadata(document, true),
    ) as unknown as Configuration['fetch'],
    fetchResponseBodyLimits: { 'client_id metadata document': CIMD.maxBytes },
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      deviceFlow: { enabled: false },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      // An https URL as client_id names a client by the JSON document published there (src/oauth/cimd.ts
      // guards the fetch). Dynamic registration stays for clients that do not publish one.
      clientIdMetadataDocument: {
        enabled: true,
        ack: 'draft-02',
        cacheDuration: CIMD.cacheSeconds,
        // An app the person cannot disconnect (Connected apps) must not connect in the first place.
        allowFetch: (_ctx, clientId) => clientId.length <= CIMD.maxClientIdLength,
      },
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
        defaultResource: (ctx, _client, oneOf) => {
          if (!oneOf) return defaultResource(config.baseUrl);
          // Several resources named in the token request itself ask for a token no single audience can
          // carry: given them all back, oidc-provider answers invalid_target (RFC 8707 §2.2). Only a grant's
          // several resources, none named now, are narrowed to the default (it chose /mcp silently, and the
          // client, asking for /api first, met a 401 there).
          if (ctx.oidc.params?.resource !== undefined) return oneOf;
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
    // Always rotate, except that parallel refreshes within the grace period share one successor.
    rotateRefreshToken: (koa) => {
      refuseUngrantedResource(koa);
      return refreshGrace.claim(koa);
    },
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
    findAccount: async (koa, sub) => {
      const exists = readAheadAccount(koa, sub) ?? (await orm.em.fork().findOne(User, { id: sub })) !== null;
      if (!exists) return undefined;
      return { accountId: sub, claims: () => ({ sub }) };
    },
    renderError: (koa, out) => {
      koa.type = 'html';
      // The resume of a step used up or expired (Back after an answer, a second resume) is no fault of the
      // app's request, as oidc-provider's invalid_request would have it.
      const stepOver = koa.oidc?.route === 'resume' && out.error === 'invalid_request';
      // A database outage (answerDatabaseOutages in index.ts marks it before this page is made) is the
      // service's to say, not "something went wrong, tell the app's maker": it answers 503 as that page.
      if (koa.state.databaseUnavailable) {
        koa.body = errorPage('temporarily_unavailable', 'the database is unreachable');
        return;
      }
      const error = out.error ?? 'server_error';
      koa.body = errorPage(error, out.error_description, stepOver ? 'step_over' : error);
    },
  };

  const provider = new Provider(config.baseUrl, configuration);
  provider.use(refreshGrace.middleware);
  // oidc-provider's own form_post answer is a form aimed at the client's (validated) redirect URI.
  provider.use(async (koa, next) => {
    await next();
    const redirectUri = koa.oidc?.params?.redirect_uri;
    if (koa.oidc?.redirectUriCheckPerformed && typeof redirectUri === 'string' && koa.type === 'text/html')
      allowFormActionTo(koa.res, redirectUri);
  });
  // Its URLs and cookies follow BASE_URL, never the Host or X-Forwarded-* headers a client sends. koa's own
  // proxy setting is left off: it would only change koa's ctx.ip, which nothing reads (express's req.ip,
  // under `trust proxy`, is the client address of rate limits and audit events).
  pinPublicOrigin(provider, config.baseUrl);
  return provider;
}

/**
 * Refuses a `resource` the refresh token was not granted for before anything is consumed: oidc-provider
 * checks the resource only after consuming the old token, which would burn it for a client mistake.
 */
function refuseUngrantedResource(koa: KoaContextWithOIDC): void {
  const requested = koa.oidc.params?.resource as string | string[] | undefined;
  const refreshToken = koa.oidc.entities.RefreshToken;
  if (requested !== undefined && refreshToken) {
    const granted = refreshToken.resourceIndicators as Set<string>;
    for (const indicator of Array.isArray(requested) ? requested : [requested]) {
      if (!granted.has(indicator))
        throw new errors.InvalidTarget('resource was not granted to this refresh token');
    }
  }
}

/**
 * The default policy, with consent remembered per user and client (only newly requested scopes are asked
 * for), except for public clients: without a secret nothing proves that the app asking now is the one the
 * person approved (any local program can listen on a loopback port or claim a custom scheme), so every
 * authorization of a public client shows the consent page again (RFC 8252 §8.6). docs/oauth.md explains.
 */
function interactionPolicyWithRememberedConsent(sessions: Sessions) {
  const { Check } = interactionPolicy;
  const policy = interactionPolicy.base();
  const consent = policy.get('consent');
  consent?.checks.remove('native_client_prompt');
  consent?.checks.add(
    new Check(
      'public_client_prompt',
      'public clients cannot prove their identity; the person approves every authorization',
      'interaction_required',
      (koa) =>
        koa.oidc.client?.tokenEndpointAuthMethod === 'none' && !koa.oidc.result?.consent
          ? Check.REQUEST_PROMPT
          : Check.NO_NEED_TO_PROMPT,
    ),
  );
  // The browser session of this service decides who is signed in: an authorization-server session whose
  // person has signed out here (or signed in as someone else since) asks for sign-in again.
  policy.get('login')?.checks.add(
    new Check('browser_session', 'End-User authentication is required', async (koa) => {
      const who = await sessions.current(koa.req);
      return who?.userId === koa.oidc.session?.accountId ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  return policy;
}
