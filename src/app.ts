import express, { type Express } from 'express';
import helmet from 'helmet';
import { createApi } from './api/index.ts';
import type { Door } from './authz/caller.ts';
import type { ServiceContext } from './context.ts';
import { pingDatabase } from './db/orm.ts';
import { errorHandler } from './http-errors.ts';
import { accessLog } from './lib/access-log.ts';
import { CSP_DIRECTIVES } from './lib/csp.ts';
import { metricsEndpoint } from './lib/metrics.ts';
import { isHealthProbe } from './lib/probes.ts';
import { requestContext } from './lib/request-context.ts';
import { createMcp } from './mcp/index.ts';
import { audienceAccepts, createOAuthServer } from './oauth/index.ts';
import { assetRoutes } from './web/assets.ts';
import { homeRoutes, notFound } from './web/home-page.ts';
import { webRoutes } from './web/routes.ts';

export interface App {
  express: Express;
  /** Stops background work the app started (timers, connections); the HTTP server is closed by the caller. */
  close(): Promise<void>;
}

export async function createApp(ctx: ServiceContext): Promise<App> {
  const app = express();
  app.disable('x-powered-by');
  // Resources that need ETags set them from their version; express's body-hash ETags would mislead.
  app.set('etag', false);
  app.set('trust proxy', ctx.config.trustProxy);
  app.use(ctx.metrics.timeRequests);
  app.use(accessLog(ctx.logger, { ignore: isHealthProbe }));
  app.use(requestContext);
  app.use(helmet({ contentSecurityPolicy: { useDefaults: false, directives: CSP_DIRECTIVES } }));
  app.use(assetRoutes());

  // On the main port only behind its token; with METRICS_PORT set, server.ts serves it there instead.
  if (ctx.config.metrics.token && ctx.config.metrics.port === undefined) {
    app.get('/metrics', metricsEndpoint(ctx.metrics, ctx.config.metrics.token));
  }
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Mount order matters: API and MCP routers first, then the OAuth endpoints clients post to (token,
  // revocation, introspection), web pages next, and the rest of the OAuth authorization server last, with
  // no body parser in front of any of it (oidc-provider reads its own bodies). It is built first so
  // both doors get its access-token verifier and the limiter of failed bearer authentications.
  const oauth = createOAuthServer(ctx);
  // Ready = PostgreSQL answers. Redis (when configured) is reported but does not make the instance
  // unready: without it only rate limits stop being enforced, and taking every instance out of the load
  // balancer for that would turn a degraded service into an outage.
  app.get('/readyz', async (_req, res) => {
    const [database, redis] = await Promise.all([
      // Both checks answer within about 2 s, whatever PostgreSQL or Redis are doing.
      pingDatabase(ctx.orm, 2_000).then(
        () => 'ok' as const,
        (error) => {
          ctx.logger.warn({ err: error }, 'readiness check failed');
          return 'unreachable' as const;
        },
      ),
      oauth.redisStatus(),
    ]);
    const status = database !== 'ok' ? 'unavailable' : redis === 'unreachable' ? 'degraded' : 'ok';
    res.status(database === 'ok' ? 200 : 503).json({ status, database, ...(redis ? { redis } : {}) });
  });
  const api = await createApi(ctx, {
    extraVerifiers: [oauth.verifyAccessToken],
    challenge: (door, scope, error) => bearerChallenge(ctx.config.baseUrl, door, scope, error),
    acceptsAtDoor: (caller, door) => audienceAccepts(caller.credential, door, ctx.config.baseUrl),
  });
  app.use('/api', oauth.failedAuthLimiter, api.restRouter);
  const mcp = createMcp(api.pipeline, {
    baseUrl: ctx.config.baseUrl,
    challenge: (scope, error) => bearerChallenge(ctx.config.baseUrl, 'mcp', scope, error),
    directToolCalls: ctx.config.mcpDirectToolCalls,
    countToolCall: ctx.metrics.mcpToolCall,
  });
  app.use('/mcp', oauth.failedAuthLimiter);
  app.use(mcp.router);
  oauth.mountTokenEndpoints(app);
  app.use(homeRoutes(ctx.config.baseUrl));
  app.use(
    webRoutes({
      ctx,
      pipeline: api.pipeline,
      sessions: oauth.sessions,
      csrf: oauth.csrf,
    }),
  );
  oauth.mount(app);
  app.use(notFound);
  app.use(errorHandler(ctx.logger));

  return { express: app, close: () => oauth.close() };
}

/** RFC 6750 / RFC 9728 challenge: where the protected resource's metadata is and which scope is needed. */
function bearerChallenge(baseUrl: string, door: Door, scope: string, error?: string): string {
  const metadata = `${baseUrl}/.well-known/oauth-protected-resource/${door === 'mcp' ? 'mcp' : 'api'}`;
  return `Bearer ${error ? `error="${error}", ` : ''}scope="${scope}", resource_metadata="${metadata}"`;
}
