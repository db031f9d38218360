// The OAuth 2.1 authorization server, as the rest of the service sees it. createOAuthServer() builds it
// (so the API and MCP pipelines can take its verifier and limiter early); mount() adds its routes, last.
import type { Express, RequestHandler } from 'express';
import type Provider from 'oidc-provider';
import type { ServiceContext } from '../app.ts';
import type { BearerVerifier, Door } from '../authz/caller.ts';
import { identityRoutes } from '../identity/routes.ts';
import { createSessions, type Sessions } from '../identity/sessions.ts';
import { startCleanup } from './cleanup.ts';
import { createCsrf } from './csrf.ts';
import { advertiseScopes, discoveryRoutes } from './discovery.ts';
import { interactionRoutes } from './interactions.ts';
import { normalizeAuthorizationRequest, normalizeRegistration } from './normalize.ts';
import { createProvider, OAUTH_ROUTES } from './provider.ts';
import { createRateLimits } from './rate-limits.ts';
import { endAuthorizationSession } from './session.ts';
import { createAccessTokenVerifier, verifierFor } from './verifier.ts';

export type { ConnectedApp } from './connected-apps.ts';
export { listConnectedApps, revokeConnectedApp } from './connected-apps.ts';
export { audienceAccepts, defaultResource, resourceFor } from './resources.ts';

export interface OAuthServer {
  provider: Provider;
  /** Browser sessions of people: who is signed in on a page. */
  sessions: Sessions;
  /** Any OAuth access token of ours, whatever its audience; compare credential.audience with resourceFor(). */
  verifyAccessToken: BearerVerifier;
  /** Only tokens issued for this door's resource. */
  verifierFor(door: Door): BearerVerifier;
  /** Put in front of bearer-authenticated routes: 429 once an address has too many 401s in a minute. */
  failedAuthLimiter: RequestHandler;
  /** Discovery, rate limits, interactions, the settings pages and oidc-provider; call after other routers. */
  mount(app: Express): void;
  /** Stops the cleanup timer and closes the Redis connection. */
  close(): Promise<void>;
}

export function createOAuthServer(ctx: ServiceContext): OAuthServer {
  const sessions = createSessions(ctx.orm, ctx.config.baseUrl);
  const provider = createProvider(ctx, sessions);
  advertiseScopes(provider);
  provider.on('server_error', (_koa, error) => ctx.logger.error({ err: error }, 'oauth server error'));

  const limits = createRateLimits(ctx);
  const csrf = createCsrf(ctx.config.cookieKeys);
  const verifyAccessToken = createAccessTokenVerifier(provider);
  let cleanup: { stop(): void } | undefined;

  return {
    provider,
    sessions,
    verifyAccessToken,
    verifierFor: (door) => verifierFor(verifyAccessToken, door, ctx.config.baseUrl),
    failedAuthLimiter: limits.failedAuth,
    mount(app) {
      app.use(discoveryRoutes(ctx.config.baseUrl));
      app.post(OAUTH_ROUTES.registration, limits.register, ...normalizeRegistration());
      app.post(OAUTH_ROUTES.token, ...limits.tokenEndpoint('token'));
      app.post(OAUTH_ROUTES.revocation, ...limits.tokenEndpoint('revoke'));
      app.post(OAUTH_ROUTES.introspection, ...limits.tokenEndpoint('introspect'));
      app.get(OAUTH_ROUTES.authorization, normalizeAuthorizationRequest);
      app.use(interactionRoutes(ctx, provider, csrf, sessions));
      app.use(
        identityRoutes(ctx, {
          sessions,
          csrf,
          onSignOut: (req, res) => endAuthorizationSession(provider, req, res),
        }),
      );

      // oidc-provider last, and only for its own paths, so other 404s stay the service's own.
      const callback = provider.callback();
      app.use((req, res, next) => {
        if (req.path.startsWith('/oauth/') || req.path.startsWith('/.well-known/o')) {
          callback(req, res);
          return;
        }
        next();
      });
      cleanup ??= startCleanup(ctx.orm, ctx.logger);
    },
    async close() {
      cleanup?.stop();
      await limits.close();
    },
  };
}

/** Builds the authorization server and mounts it at once. */
export function mountOAuth(app: Express, ctx: ServiceContext): OAuthServer {
  const server = createOAuthServer(ctx);
  server.mount(app);
  return server;
}
