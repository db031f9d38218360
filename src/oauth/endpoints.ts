// Every address under /oauth and /.well-known, with the methods it takes: which requests are handed to
// oidc-provider, and what the rest get. oidc-provider answers a path or method it has no route for with
// koa's bare `404 text/plain` "Not Found"; here a known endpoint asked with another method gets 405 with
// `Allow`, and an unknown address 404, both as the RFC 6749 error body the app's error handler gives
// these paths (src/http-errors.ts).
import type { RequestHandler } from 'express';
import { INTERACTION_PATH, OAUTH_ROUTES } from './provider.ts';

interface Endpoint {
  /** `:name` stands for one non-empty path segment. */
  path: string;
  methods: readonly ('GET' | 'POST')[];
  /** oidc-provider answers it; otherwise one of our routers, mounted before, does. */
  provider?: boolean;
  /** oidc-provider answers CORS preflight requests here (its open CORS, or the client's origins). */
  preflight?: boolean;
}

// oidc-provider's routes for the features provider.ts turns on (registration without its management
// API, so /oauth/register/:id is read-only), then the routers of discovery.ts and interactions.ts.
const ENDPOINTS: readonly Endpoint[] = [
  { path: '/.well-known/oauth-authorization-server', methods: ['GET'], provider: true, preflight: true },
  { path: '/.well-known/openid-configuration', methods: ['GET'], provider: true, preflight: true },
  { path: OAUTH_ROUTES.jwks, methods: ['GET'], provider: true, preflight: true },
  { path: OAUTH_ROUTES.token, methods: ['POST'], provider: true, preflight: true },
  { path: OAUTH_ROUTES.revocation, methods: ['POST'], provider: true, preflight: true },
  { path: OAUTH_ROUTES.introspection, methods: ['POST'], provider: true, preflight: true },
  { path: OAUTH_ROUTES.authorization, methods: ['GET'], provider: true },
  { path: `${OAUTH_ROUTES.authorization}/:uid`, methods: ['GET'], provider: true },
  { path: OAUTH_ROUTES.registration, methods: ['POST'], provider: true },
  { path: `${OAUTH_ROUTES.registration}/:clientId`, methods: ['GET'], provider: true },
  { path: '/.well-known/oauth-protected-resource', methods: ['GET'] },
  { path: '/.well-known/oauth-protected-resource/api', methods: ['GET'] },
  { path: '/.well-known/oauth-protected-resource/mcp', methods: ['GET'] },
  { path: `${INTERACTION_PATH}/:uid`, methods: ['GET'] },
  { path: `${INTERACTION_PATH}/:uid/login`, methods: ['POST'] },
  { path: `${INTERACTION_PATH}/:uid/consent`, methods: ['POST'] },
  { path: `${INTERACTION_PATH}/:uid/abort`, methods: ['POST'] },
];

/** The same test as the error handler's for these paths' error format. */
function underOAuthPaths(path: string): boolean {
  return ['/oauth', '/.well-known'].some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The endpoint at `path`; one trailing slash is allowed, as express and oidc-provider's router allow it. */
function endpointAt(path: string): Endpoint | undefined {
  const segments = path.replace(/(.)\/$/, '$1').split('/');
  return ENDPOINTS.find((endpoint) => {
    const pattern = endpoint.path.split('/');
    return (
      pattern.length === segments.length &&
      pattern.every((part, i) => (part.startsWith(':') ? segments[i] !== '' : part === segments[i]))
    );
  });
}

/** GET also answers HEAD (express and oidc-provider alike); OPTIONS is answered everywhere (below). */
function allowedMethods(endpoint: Endpoint): string[] {
  return [...endpoint.methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])), 'OPTIONS'];
}

function clientError(status: 404 | 405, message: string, headers?: Record<string, string>): Error {
  return Object.assign(new Error(message), { status, expose: true, ...(headers ? { headers } : {}) });
}

/**
 * Mounted after the routers of these paths: hands oidc-provider what it serves, and answers the rest of
 * /oauth and /.well-known. An OPTIONS that is no CORS preflight, or a preflight where oidc-provider has no
 * CORS, gets 204 with `Allow` (and, lacking CORS headers, a browser still refuses the cross-origin call).
 */
export function oauthEndpoints(serve: RequestHandler): RequestHandler {
  return (req, res, next) => {
    if (!underOAuthPaths(req.path)) return next();
    const endpoint = endpointAt(req.path);
    if (!endpoint) return next(clientError(404, 'There is no endpoint at this address.'));
    const allowed = allowedMethods(endpoint);
    const preflight = req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined;
    const takes = req.method !== 'OPTIONS' && allowed.includes(req.method);
    if (endpoint.provider && (preflight ? endpoint.preflight : takes)) return serve(req, res, next);
    if (req.method === 'OPTIONS') {
      res.set('Allow', allowed.join(', ')).status(204).end();
      return;
    }
    // A method one of our routers takes, yet the request got here: that router passed it on as not its own.
    if (takes) return next(clientError(404, 'There is no endpoint at this address.'));
    next(
      clientError(405, `This endpoint does not take ${req.method}; it takes ${allowed.join(', ')}.`, {
        Allow: allowed.join(', '),
      }),
    );
  };
}
