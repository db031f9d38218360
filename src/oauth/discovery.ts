// Discovery documents. oidc-provider serves the authorization server metadata (RFC 8414) itself; we add
// our scope vocabulary to it and serve the protected resource metadata (RFC 9728) for our two resources.
import { type RequestHandler, Router } from 'express';
import type Provider from 'oidc-provider';
import { ALL_SCOPES } from '../authz/scopes.ts';
import { resourceFor } from './resources.ts';

/**
 * `scopes_supported` lists what clients may ask for: our object:action scopes (not OIDC's). The revocation
 * and introspection endpoints authenticate clients exactly as the token endpoint does (oidc-provider has one
 * list for all three), but it names the methods for the token endpoint alone, and RFC 8414 reads a missing
 * list as `client_secret_basic` only: a public client would conclude it cannot revoke its own tokens.
 * Recognised by oidc-provider's route name, so both metadata addresses get it, with or without a trailing
 * slash.
 */
export function advertiseScopes(provider: Provider): void {
  provider.use(async (koa, next) => {
    await next();
    if (koa.oidc?.route === 'discovery' && koa.status === 200 && koa.body) {
      const metadata = koa.body as Record<string, unknown>;
      metadata.scopes_supported = ALL_SCOPES;
      metadata.revocation_endpoint_auth_methods_supported = metadata.token_endpoint_auth_methods_supported;
      metadata.introspection_endpoint_auth_methods_supported = metadata.token_endpoint_auth_methods_supported;
    }
  });
}

function protectedResourceMetadata(baseUrl: string, door: 'rest' | 'mcp') {
  return {
    resource: resourceFor(door, baseUrl),
    authorization_servers: [baseUrl],
    scopes_supported: ALL_SCOPES,
    bearer_methods_supported: ['header'],
    resource_name: door === 'mcp' ? 'Localization service MCP server' : 'Localization service REST API',
  };
}

const openCors: RequestHandler = (req, res, next) => {
  res.set('Access-Control-Allow-Origin', '*');
  if (req.method === 'OPTIONS') {
    res.set('Access-Control-Allow-Methods', 'GET, OPTIONS');
    res.set('Access-Control-Allow-Headers', req.get('Access-Control-Request-Headers') ?? '*');
    res.set('Access-Control-Max-Age', '86400');
    res.status(204).end();
    return;
  }
  next();
};

/**
 * RFC 9728 documents. The path suffix names the resource: `/mcp` for the MCP server and `/api` for the
 * REST API; the bare address describes the REST API (it is what API 401 challenges point to).
 */
export function discoveryRoutes(baseUrl: string): Router {
  const router = Router();
  const paths: [string, 'rest' | 'mcp'][] = [
    ['/.well-known/oauth-protected-resource', 'rest'],
    ['/.well-known/oauth-protected-resource/api', 'rest'],
    ['/.well-known/oauth-protected-resource/mcp', 'mcp'],
  ];
  for (const [path, door] of paths) {
    const body = protectedResourceMetadata(baseUrl, door);
    router.options(path, openCors);
    router.get(path, openCors, (_req, res) => {
      res.set('Cache-Control', 'public, max-age=3600');
      res.json(body);
    });
  }
  return router;
}
