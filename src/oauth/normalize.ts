// Small rewrites of client requests before oidc-provider sees them, so that real MCP clients get
// through without special cases on their side (docs/oauth.md lists each one and why).
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { DEFAULT_OAUTH_SCOPES, isScope } from '../authz/scopes.ts';
import { findTextIssues } from '../lib/text-input.ts';
import { requireUtf8Body } from '../lib/utf8-body.ts';
import { CLIENT_NAME_MAX_CHARACTERS } from '../web/foreign-name.ts';
import { canonicalResource } from './resources.ts';

/**
 * GET /oauth/authorize: unknown scope values (openid, profile, a typo) are dropped rather than fatal, and
 * a request left with no scope gets the default read scopes instead of an error; resource indicators are
 * made canonical (canonicalizeResources).
 */
export function normalizeAuthorizationRequest(baseUrl: string): RequestHandler {
  return (req, _res, next) => {
    const url = new URL(req.originalUrl, 'http://placeholder');
    canonicalizeResources(url.searchParams, baseUrl);
    // A repeated `scope` is left as sent, so oidc-provider refuses it (invalid_request) like every other
    // repeated parameter; rewriting it here would silently pick or merge one.
    if (url.searchParams.getAll('scope').length <= 1) {
      const requested = (url.searchParams.get('scope') ?? '').split(' ').filter(isScope);
      const scope = requested.length > 0 ? [...new Set(requested)] : DEFAULT_OAUTH_SCOPES;
      url.searchParams.set('scope', scope.join(' '));
    }
    req.url = `${url.pathname}${url.search}`;
    next();
  };
}

/**
 * POST /oauth/token: resource indicators made canonical, as at authorization. The rate limiter read the form
 * into a Buffer (rate-limits.ts), which oidc-provider parses; only a form that names a resource is rewritten.
 */
export function normalizeTokenRequest(baseUrl: string): RequestHandler {
  return (req, _res, next) => {
    if (Buffer.isBuffer(req.body) && req.body.includes('resource=')) {
      const params = new URLSearchParams(req.body.toString('utf8'));
      if (canonicalizeResources(params, baseUrl)) req.body = Buffer.from(params.toString());
    }
    next();
  };
}

/**
 * Each `resource` as the indicator it stands for (`{BASE_URL}/mcp/` is `{BASE_URL}/mcp`: clients derive it
 * from a URL they were configured with), so that a grant, its code and its refresh tokens all compare
 * equal whichever spelling each request used; one that is not ours stays as sent, for oidc-provider to
 * refuse (invalid_target). True when something changed.
 */
function canonicalizeResources(params: URLSearchParams, baseUrl: string): boolean {
  const sent = params.getAll('resource');
  const canonical = sent.map((indicator) => canonicalResource(indicator, baseUrl) ?? indicator);
  if (canonical.every((indicator, i) => indicator === sent[i])) return false;
  params.delete('resource');
  for (const indicator of canonical) params.append('resource', indicator);
  return true;
}

/**
 * A client's metadata, registered (POST /oauth/register, RFC 7591) or read from its client ID metadata
 * document, adjusted before oidc-provider validates it, so that both kinds of client live by one set of
 * rules:
 * - `scope` is dropped: oidc-provider would turn it into an allow-list (or refuse our scope names), and
 *   the user's consent is what limits a client here;
 * - every client is a "native" application in oidc-provider's terms, which gives exactly our redirect
 *   rules: https, loopback http on any port (RFC 8252), private-use schemes; never javascript:, data:,
 *   fragments or plain http to other hosts;
 * - a client allowed the authorization code grant may also refresh (the spec registers only
 *   authorization_code and uses refresh_token at the token endpoint);
 * - a metadata document that names no token endpoint authentication is a public client (`none`): it cannot
 *   hold a secret, and the registration default (`client_secret_basic`) would refuse it.
 */
export function normalizeClientMetadata(body: Record<string, unknown>, fromDocument = false): void {
  delete body.scope;
  body.application_type = 'native';
  const grants = body.grant_types;
  if (Array.isArray(grants) && grants.includes('authorization_code') && !grants.includes('refresh_token')) {
    body.grant_types = [...grants, 'refresh_token'];
  }
  if (fromDocument && body.token_endpoint_auth_method === undefined) body.token_endpoint_auth_method = 'none';
}

/** POST /oauth/register: the body parsed, refused if it holds unsafe text, and normalized as above. */
export function normalizeRegistration(): RequestHandler[] {
  const parse = express.json({ limit: '56kb', verify: requireUtf8Body });
  const parseOrOAuthError = (req: Request, res: Response, next: NextFunction) =>
    parse(req, res, (error?: unknown) => {
      // Only a body that is not JSON is bad metadata; too large, a bad charset or encoding are answered
      // (413, 415, 400) by the app's last error handler, in the same OAuth error format.
      if ((error as { type?: string } | undefined)?.type === 'entity.parse.failed') {
        res
          .status(400)
          .json({ error: 'invalid_client_metadata', error_description: 'the body must be a JSON object' });
        return;
      }
      next(error);
    });
  const rewrite: RequestHandler = (req, _res, next) => {
    const body = req.body as Record<string, unknown> | undefined;
    if (body && typeof body === 'object' && !Array.isArray(body)) normalizeClientMetadata(body);
    next();
  };
  // The metadata is stored as it comes (client_name is shown on the consent page); the REST API's rule on
  // characters applies, answered in RFC 7591's terms, and a name the consent page could show whole.
  const refuseUnsafeText: RequestHandler = (req, res, next) => {
    const name = (req.body as { client_name?: unknown } | undefined)?.client_name;
    if (typeof name === 'string' && [...name].length > CLIENT_NAME_MAX_CHARACTERS) {
      res.status(400).json({
        error: 'invalid_client_metadata',
        error_description: `client_name must be at most ${CLIENT_NAME_MAX_CHARACTERS} characters`,
      });
      return;
    }
    const issue = findTextIssues(req.body, '')[0];
    if (!issue) return next();
    res.status(400).json({
      error: 'invalid_client_metadata',
      // RFC 6749 allows only printable ASCII here; a refused key in the field name is shown as `?`.
      error_description: `${issue.pointer.slice(1) || 'the body'} ${issue.message}`.replace(
        /[^\x20-\x7e]/g,
        '?',
      ),
    });
  };
  // A client that could never get a token here (no authorization code grant, or no `code` response) is
  // refused at registration, where the mistake is, instead of registered and then told at every
  // authorization that its request is malformed.
  const refuseUnusable: RequestHandler = (req, res, next) => {
    const { grant_types: grants, response_types: responses } = (req.body ?? {}) as Record<string, unknown>;
    const refused =
      Array.isArray(grants) && !grants.includes('authorization_code')
        ? 'grant_types must include authorization_code: this server issues tokens through that grant only'
        : Array.isArray(responses) && !responses.includes('code')
          ? 'response_types must include code: this server answers authorizations with a code only'
          : undefined;
    if (!refused) return next();
    res.status(400).json({ error: 'invalid_client_metadata', error_description: refused });
  };
  return [parseOrOAuthError, refuseUnsafeText, refuseUnusable, rewrite];
}
