import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { Pipeline } from '../api/pipeline.ts';
import { problems, sendProblem } from '../api/problem.ts';
import type { Caller } from '../authz/caller.ts';
import { createRequestServer, type ToolRegistry } from './server.ts';

// The Streamable HTTP door at /mcp. Stateless: each POST gets its own server and transport, so any
// instance answers any request and nothing lives in memory between requests. The HTTP layer does what
// must be HTTP to be understood by clients: authentication (401 challenge, once per request), the scope
// step-up (403 challenge), the Origin check against DNS rebinding, and CORS.

export interface McpHttpOptions {
  baseUrl: string;
  registry: ToolRegistry;
  pipeline: Pipeline;
  /** `WWW-Authenticate` for a 401 or 403 at /mcp, pointing at /.well-known/oauth-protected-resource/mcp. */
  challenge(scope: string, error?: 'invalid_token' | 'insufficient_scope'): string;
}

export const MCP_PATH = '/mcp';

const CORS_ALLOW_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID';
const CORS_EXPOSE_HEADERS = 'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version';
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export function createMcpRouter(options: McpHttpOptions): Router {
  const { registry, pipeline } = options;
  const ownOrigin = new URL(options.baseUrl).origin;
  // With no token yet, a client is told the scopes that unlock the whole tool set; the user consents.
  const connectScope = [...new Set(registry.all.map((definition) => definition.scope))].join(' ');

  const router = express.Router();

  const checkOrigin = (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    if (!originAllowed(origin, ownOrigin)) {
      return sendProblem(
        res,
        problems.forbidden(`Requests from the origin ${origin} are not accepted here.`),
      );
    }
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', CORS_EXPOSE_HEADERS);
    res.vary('Origin');
    next();
  };

  router.options(MCP_PATH, checkOrigin, (_req, res) => {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(204).end();
  });

  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
    const caller = await pipeline.authenticate(bearer, 'mcp');
    if (!caller) {
      const detail = bearer
        ? 'The bearer token is invalid, expired, revoked or not meant for this MCP server.'
        : 'Send a bearer token in the Authorization header.';
      return sendProblem(
        res,
        problems.unauthorized(detail, options.challenge(connectScope, bearer ? 'invalid_token' : undefined)),
      );
    }
    res.locals.caller = caller;
    res.locals.bearer = bearer;
    next();
  };

  const onlyPost = (req: Request, res: Response, next: NextFunction) => {
    // No server-initiated stream and no session to delete: the endpoint is stateless.
    if (req.method !== 'POST') return sendProblem(res, problems.methodNotAllowed(['POST']));
    next();
  };

  const parseJson = express.json({ limit: '1mb', type: 'application/json' });

  // A call outside the token's scopes is answered by HTTP itself, so that clients can step up.
  const checkScopes = (req: Request, res: Response, next: NextFunction) => {
    const caller: Caller = res.locals.caller;
    for (const message of Array.isArray(req.body) ? req.body : [req.body]) {
      if (message?.method !== 'tools/call') continue;
      const definition = registry.byName.get(message.params?.name);
      if (definition && !caller.scopes.has(definition.scope)) {
        return sendProblem(
          res,
          problems.insufficientScope(
            `The tool ${definition.tool.name} needs the ${definition.scope} scope, which the token does not hold.`,
            options.challenge(definition.scope, 'insufficient_scope'),
          ),
        );
      }
    }
    next();
  };

  const handle = async (req: Request, res: Response) => {
    const server = createRequestServer(registry, pipeline, {
      caller: res.locals.caller,
      bearer: res.locals.bearer,
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };

  // Express 5 passes rejected promises of async handlers on to the error handlers.
  router.all(MCP_PATH, checkOrigin, authenticate, onlyPost, parseJson, checkScopes, handle);

  // A body the parser refuses (not JSON: a JSON-RPC parse error; too large: 413; a bad charset or
  // encoding: 415 or 400) is answered as a JSON-RPC error by the app's last error handler (src/http-errors.ts).
  return router;
}

/** DNS rebinding: a browser page may reach us only from our own origin or from a local (loopback) one. */
export function originAllowed(origin: string, ownOrigin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === ownOrigin) return true;
  return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname);
}
