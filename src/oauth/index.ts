// The OAuth 2.1 authorization server, as the rest of the service sees it. createOAuthServer() builds it
// (so the API and MCP pipelines can take its verifier and limiter early); mountTokenEndpoints() adds the
// endpoints clients post to, before the pages; mount() adds the rest of its routes, last.
import type { Express, RequestHandler } from 'express';
import type Provider from 'oidc-provider';
import type { BearerVerifier, Door } from '../authz/caller.ts';
import type { ServiceContext } from '../context.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DATABASE_UNAVAILABLE_DETAIL,
  isDatabaseUnavailable,
} from '../db/unavailable.ts';
import { createSessions, type Sessions } from '../identity/sessions.ts';
import { labelOperation } from '../lib/metrics.ts';
import { type Csrf, createCsrf } from '../web/csrf.ts';
import { identityRoutes } from '../web/sign-in/routes.ts';
import { startCleanup } from './cleanup.ts';
import { advertiseScopes, discoveryRoutes } from './discovery.ts';
import { oauthEndpoints } from './endpoints.ts';
import { interactionRoutes } from './interactions.ts';
import { normalizeAuthorizationRequest, normalizeRegistration, normalizeTokenRequest } from './normalize.ts';
import { createProvider, OAUTH_ROUTES } from './provider.ts';
import { createRateLimits } from './rate-limits.ts';
import { endAuthorizationSession } from './session.ts';
import { createAccessTokenVerifier, verifierFor } from './verifier.ts';

// The paths oidc-provider serves itself, as labels of the request-duration metric (anything else: other).
const OAUTH_PATHS = new Set<string>([
  ...Object.values(OAUTH_ROUTES),
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
]);

export { listConnectedApps, revokeConnectedApp } from '../domain/connected-apps.ts';
export { audienceAccepts, resourceFor } from './resources.ts';

export interface OAuthServer {
  provider: Provider;
  /** Browser sessions of people: who is signed in on a page. */
  sessions: Sessions;
  /** CSRF tokens of the pages' forms. */
  csrf: Csrf;
  /** Any OAuth access token of ours, whatever its audience; compare credential.audience with resourceFor(). */
  verifyAccessToken: BearerVerifier;
  /** Only tokens issued for this door's resource. */
  verifierFor(door: Door): BearerVerifier;
  /** Put in front of bearer-authenticated routes: 429 once an address has too many 401s in a minute. */
  failedAuthLimiter: RequestHandler;
  /**
   * The token, revocation and introspection endpoints behind their rate limits, answered by oidc-provider
   * at once. Call before the pages' routers: no page takes these paths, and a refresh request then does not
   * walk every page's route on its way to oidc-provider (about 5% of a refresh's CPU).
   */
  mountTokenEndpoints(app: Express): void;
  /** Discovery, registration, interactions, the settings pages and oidc-provider; call after other routers. */
  mount(app: Express): void;
  /** For /readyz: whether Redis (shared rate-limit counters) answers; undefined without REDIS_URL. */
  redisStatus(): Promise<'ok' | 'unreachable' | undefined>;
  /** Stops the cleanup timer and closes the Redis connection. */
  close(): Promise<void>;
}

export function createOAuthServer(ctx: ServiceContext): OAuthServer {
  const sessions = createSessions(ctx.orm, ctx.config.baseUrl);
  const provider = createProvider(ctx, sessions);
  advertiseScopes(provider);
  answerDatabaseOutages(provider, ctx);
  provider.on('grant.success', (koa) => ctx.metrics.tokenOutcome(koa.oidc.params?.grant_type, 'issued'));
  provider.on('grant.error', (koa, error) =>
    ctx.metrics.tokenOutcome(koa.oidc?.params?.grant_type, 'refused', (error as { error?: string }).error),
  );

  const limits = createRateLimits(ctx);
  const csrf = createCsrf(ctx.config.cookieKeys);
  const verifyAccessToken = createAccessTokenVerifier(provider);
  let cleanup: { stop(): void } | undefined;
  const callback = provider.callback();
  const serve: RequestHandler = (req, res) => {
    labelOperation(res, OAUTH_PATHS.has(req.path) ? `${req.method} ${req.path}` : 'other');
    callback(req, res);
  };

  return {
    provider,
    sessions,
    csrf,
    verifyAccessToken,
    verifierFor: (door) => verifierFor(verifyAccessToken, door, ctx.config.baseUrl),
    failedAuthLimiter: limits.failedAuth,
    redisStatus: () => limits.redisStatus(),
    mountTokenEndpoints(app) {
      app.post(
        OAUTH_ROUTES.token,
        ...limits.tokenEndpoint('token'),
        normalizeTokenRequest(ctx.config.baseUrl),
        serve,
      );
      app.post(OAUTH_ROUTES.revocation, ...limits.tokenEndpoint('revoke'), serve);
      app.post(OAUTH_ROUTES.introspection, ...limits.tokenEndpoint('introspect'), serve);
    },
    mount(app) {
      app.use(discoveryRoutes(ctx.config.baseUrl));
      app.post(OAUTH_ROUTES.registration, limits.register, ...normalizeRegistration());
      app.get(OAUTH_ROUTES.authorization, normalizeAuthorizationRequest(ctx.config.baseUrl));
      app.use(interactionRoutes(ctx, provider, csrf, sessions));
      app.use(
        identityRoutes(ctx, {
          sessions,
          csrf,
          onSignOut: (req, res) => endAuthorizationSession(provider, req, res),
        }),
      );

      // oidc-provider last, and only for what it serves; the rest of /oauth and /.well-known gets our 404
      // or 405 (endpoints.ts), and other paths go on to the service's own 404.
      app.use(oauthEndpoints(serve));
      cleanup ??= startCleanup(ctx.orm, ctx.logger);
    },
    async close() {
      cleanup?.stop();
      await limits.close();
    },
  };
}

/**
 * oidc-provider answers any error of its storage with 500 server_error. While the database is unreachable
 * that becomes 503 with Retry-After (and `temporarily_unavailable` in JSON bodies), as on the other doors:
 * the error is recognised where oidc-provider reports it, and the answer rewritten on the way out.
 */
function answerDatabaseOutages(provider: Provider, ctx: ServiceContext): void {
  provider.on('server_error', (koa, error) => {
    if (!isDatabaseUnavailable(error)) {
      ctx.logger.error({ err: error }, 'oauth server error');
      return;
    }
    koa.state.databaseUnavailable = true;
    ctx.logger.warn({ reason: (error as Error).message, path: koa.path }, 'database unavailable');
  });
  provider.use(async (koa, next) => {
    await next();
    if (!koa.state.databaseUnavailable || koa.status !== 500) return;
    koa.status = 503;
    koa.set('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    // A JSON error body is replaced; the HTML error page (authorization endpoint) keeps its page.
    if (koa.body && typeof koa.body === 'object' && !Buffer.isBuffer(koa.body) && !('pipe' in koa.body)) {
      koa.body = { error: 'temporarily_unavailable', error_description: DATABASE_UNAVAILABLE_DETAIL };
    }
  });
}
