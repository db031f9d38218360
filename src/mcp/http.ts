import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  type AuthInfo,
  type CallToolResult,
  createMcpHandler,
  ProtocolError,
} from '@modelcontextprotocol/server';
import express, {
  type ErrorRequestHandler,
  type NextFunction,
  type Request,
  type Response,
  type Router,
} from 'express';
import { MAX_REQUEST_BODY_BYTES } from '../api/limits.ts';
import type { Pipeline } from '../api/pipeline.ts';
import { problems, sendProblem } from '../api/problem.ts';
import type { FoundCaller } from '../authz/authenticator.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { bearerToken } from '../lib/bearer.ts';
import { labelOperation } from '../lib/metrics.ts';
import { requireUtf8Body } from '../lib/utf8-body.ts';
import { deepJsonRefusal } from './depth.ts';
import { directAnswer, type PlainToolCall, plainToolCall } from './direct-call.ts';
import { readRevisionHeader, unservedRevisionAnswer } from './revision.ts';
import { type CallContext, callTool, createRequestServer, type ToolRegistry } from './server.ts';
import type { ToolDefinition } from './tools.ts';
import { type JsonRpcId, jsonRpcIdOf, type UnavailableAnswer, unavailableAnswer } from './unavailable.ts';

// The Streamable HTTP door at /mcp, on the v2 SDK's createMcpHandler: one server definition answers the
// 2026-07-28 revision (no initialize, a `_meta` envelope on every request, server/discover, the
// Mcp-Method/Mcp-Name headers checked against the body) and, on its stateless legacy path, 2025-03-26 ...
// 2025-11-25 clients. Each request gets its own server, so any instance answers any request and nothing
// lives in memory between requests. The HTTP layer here does what must be HTTP to be understood by
// clients: authentication (401 challenge, once per request), the scope step-up (403 challenge), the Origin
// check against DNS rebinding, and CORS.

export interface McpHttpOptions {
  baseUrl: string;
  registry: ToolRegistry;
  pipeline: Pipeline;
  /** `WWW-Authenticate` for a 401 or 403 at /mcp, pointing at /.well-known/oauth-protected-resource/mcp. */
  challenge(scope: string, error?: 'invalid_token' | 'insufficient_scope'): string;
  /** Answer plain tools/call requests without the SDK's per-request machinery (direct-call.ts). */
  directToolCalls: boolean;
  /** Counts a tool call by the way it was served (metrics). */
  countToolCall?: (path: 'direct' | 'sdk') => void;
}

const MCP_PATH = '/mcp';

const CORS_ALLOW_HEADERS =
  'Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, traceparent, tracestate';
const CORS_EXPOSE_HEADERS = 'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version';
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export function createMcpRouter(options: McpHttpOptions): Router {
  const { registry, pipeline } = options;
  const { origin: ownOrigin, host: ownHost } = new URL(options.baseUrl);
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
    // POST only: this server offers no GET stream and keeps no session to DELETE (both answer 405).
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', CORS_ALLOW_HEADERS);
    res.setHeader('Access-Control-Max-Age', '86400');
    res.status(204).end();
  });

  const refuseBearer = (bearer: string | undefined) => {
    const detail = bearer
      ? 'The bearer token is invalid, expired, revoked or not meant for this MCP server.'
      : 'Send a bearer token in the Authorization header.';
    return problems.unauthorized(
      detail,
      options.challenge(connectScope, bearer ? 'invalid_token' : undefined),
    );
  };

  // The bearer is looked up before the body is read; a caller from the verified-caller cache is confirmed
  // once the body shows what it asks for (confirmCaller).
  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    const bearer = bearerToken(req.headers.authorization);
    const found = await pipeline.find(bearer, 'mcp');
    if (!found) return sendProblem(res, refuseBearer(bearer));
    res.locals.found = found;
    res.locals.bearer = bearer;
    next();
  };

  /**
   * A caller from the verified-caller cache confirmed against the database (one small statement): false
   * when its credential no longer holds, and the request is answered by the 401 challenge.
   */
  const confirmed = async (res: Response): Promise<boolean> => {
    const found: FoundCaller = res.locals.found;
    if (found.cachedAtEpoch === undefined) return true;
    const caller = await pipeline.confirm(res.locals.bearer, 'mcp', found);
    if (!caller) return false;
    res.locals.found = { caller } satisfies FoundCaller;
    return true;
  };

  /** Answers a request refused before any tool runs, but a revoked token hears only the 401 challenge. */
  const refuseUnlessRevoked = async (res: Response, answer: () => void) => {
    if (await confirmed(res)) answer();
    else sendProblem(res, refuseBearer(res.locals.bearer));
  };

  // A cached caller is confirmed before anything is decided on it: tools/list, the scope step-up, every
  // other method. One plain call of a tool on an account is left to the pipeline, whose statement loading
  // the account confirms it at no extra cost (callTool confirms it when the arguments never get there);
  // should that refuse the credential, the answer is still an HTTP 401 (serve() below). Only a plain call:
  // one the SDK could refuse before it reaches callTool (arguments that are not an object, a broken
  // envelope) would otherwise tell a revoked token what is wrong with its request.
  const confirmCaller = async (req: Request, res: Response, next: NextFunction) => {
    const found: FoundCaller = res.locals.found;
    if (found.cachedAtEpoch === undefined) return next();
    const call = plainCallOf(req, res);
    const definition = call && registry.byName.get(call.params.name);
    if (definition?.spec.accountParam && found.caller.scopes.has(definition.scope)) return next();
    await refuseUnlessRevoked(res, next);
  };

  const onlyPost = async (req: Request, res: Response, next: NextFunction) => {
    // No server-initiated stream and no session to delete: the endpoint is stateless.
    if (req.method === 'POST') return next();
    await refuseUnlessRevoked(res, () => sendProblem(res, problems.methodNotAllowed(['POST'])));
  };

  const parseJson = express.json({
    limit: MAX_REQUEST_BODY_BYTES,
    type: 'application/json',
    verify: requireUtf8Body,
  });
  // A body the parser refuses goes on to the app's error handler (src/http-errors.ts), after the caller.
  const readBody = (req: Request, res: Response, next: NextFunction) =>
    parseJson(req, res, (error?: unknown) => {
      if (error === undefined) return next();
      refuseUnlessRevoked(res, () => next(error)).catch(next);
    });

  // A call outside the token's scopes is answered by HTTP itself, so that clients can step up.
  const scopeRefusal = (body: unknown, { caller }: FoundCaller) => {
    for (const message of Array.isArray(body) ? body : [body]) {
      if (message?.method !== 'tools/call') continue;
      const definition = registry.byName.get(message.params?.name);
      if (definition && !caller.scopes.has(definition.scope)) {
        return problems.insufficientScope(
          `The tool ${definition.tool.name} needs the ${definition.scope} scope, which the token does not hold.`,
          options.challenge(definition.scope, 'insufficient_scope'),
        );
      }
    }
    return undefined;
  };

  const checkScopes = (req: Request, res: Response, next: NextFunction) => {
    labelOperation(res, mcpOperation(Array.isArray(req.body) ? req.body : [req.body], registry.byName));
    const refusal = scopeRefusal(req.body, res.locals.found);
    if (refusal) return sendProblem(res, refusal);
    next();
  };

  // Too deep a body is refused before anything walks it (depth.ts); a revoked token still hears 401 first,
  // and a tool outside the token's scopes the step-up, as with any other arguments.
  const refuseDeepBody = async (req: Request, res: Response, next: NextFunction) => {
    const refusal = deepJsonRefusal(req.body);
    if (!refusal) return next();
    await refuseUnlessRevoked(res, () => {
      const stepUp = scopeRefusal(req.body, res.locals.found);
      if (stepUp) return sendProblem(res, stepUp);
      res.status(refusal.status).json(refusal.body);
    });
  };

  // A revision the door does not serve is refused before the SDK reads the request, and the header the SDK
  // reads is the revision as readRevisionHeader read it (revision.ts).
  const refuseUnservedRevision = async (req: Request, res: Response, next: NextFunction) => {
    const header = readRevisionHeader(req.headers['mcp-protocol-version'], req.body);
    if ('served' in header) {
      if (header.served === undefined) delete req.headers['mcp-protocol-version'];
      else req.headers['mcp-protocol-version'] = header.served;
      return next();
    }
    await refuseUnlessRevoked(res, () => {
      const answer = unservedRevisionAnswer(jsonRpcIdOf(req.body), header.unserved);
      res.status(answer.status).json(answer.body);
    });
  };

  // The SDK passes `authInfo` through to the factory untouched; the caller rides in its `extra`. Modern
  // answers are JSON (the default `auto` mode streams only when a handler emits a message before its
  // result, and ours never do).
  const mcp = createMcpHandler(
    ({ authInfo }) => createRequestServer(registry, pipeline, authInfo?.extra?.context as CallContext),
    { legacy: 'stateless', maxRequestBodySize: MAX_REQUEST_BODY_BYTES },
  );
  const serve = toNodeHandler(
    {
      async fetch(request, requestOptions) {
        const extra = requestOptions?.authInfo?.extra as { context: CallContext; id: JsonRpcId };
        const { context } = extra;
        const response = await mcp.fetch(request, requestOptions);
        // A tool call the database outage stopped gets the 503 of unavailable.ts, and (the pipeline
        // confirmed the cached caller while running the call) a refused credential the 401 challenge, not
        // a tool result. A JSON answer is made once the call is done, so that is known by now; a streamed
        // (legacy) answer, one message, is read to its end first.
        const streamed = !response.headers.get('content-type')?.startsWith('application/json');
        const body = streamed ? await response.arrayBuffer() : undefined;
        if (context.unavailable) return webAnswer(unavailableAnswer(extra.id, context.unavailable));
        if (context.found.cachedAtEpoch === undefined || !context.refused)
          return body === undefined ? response : new Response(body, response);
        const problem = refuseBearer(context.bearer);
        return new Response(JSON.stringify(problem.toJSON()), {
          status: problem.status,
          headers: { ...problem.headers, 'content-type': 'application/problem+json' },
        });
      },
    },
    { maxRequestBodySize: MAX_REQUEST_BODY_BYTES },
  );

  // A plain tools/call (direct-call.ts): the same callTool the SDK's server runs, answered as the SDK answers it.
  const answerDirectly = async (call: PlainToolCall, context: CallContext, res: Response) => {
    let outcome: CallToolResult | ProtocolError;
    try {
      outcome = await callTool(registry, pipeline, context, call.params);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      outcome = error;
    }
    if (context.refused) return sendProblem(res, refuseBearer(context.bearer));
    if (context.unavailable) return sendAnswer(res, unavailableAnswer(call.id, context.unavailable));
    const answer = directAnswer(call, outcome, registry.serverInfo);
    res.writeHead(200, answer.headers).end(answer.body);
  };

  const handle = async (req: Request, res: Response) => {
    const found: FoundCaller = res.locals.found;
    const context: CallContext = {
      found,
      bearer: res.locals.bearer,
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
      countToolCall: options.countToolCall,
      textOnly: withoutStructuredContent(req.headers['mcp-protocol-version']),
    };
    const call = options.directToolCalls ? plainCallOf(req, res) : undefined;
    if (call) {
      options.countToolCall?.('direct');
      return answerDirectly(call, context, res);
    }
    const { caller } = found;
    const auth: AuthInfo = {
      token: res.locals.bearer,
      clientId: caller.credential.kind === 'oauth' ? caller.credential.clientId : 'account-token',
      scopes: [...caller.scopes],
      extra: { context, id: jsonRpcIdOf(req.body) },
    };
    (req as Request & { auth?: AuthInfo }).auth = auth;
    // The SDK's adapter builds its web Request's URL from the Host header, which the client writes: a Host
    // that is no valid authority (`a b`) made that a 500. Nothing behind it reads the URL's host (the
    // Origin check above uses BASE_URL), so the request goes on with ours.
    req.headers.host = ownHost;
    await serve(req, res, req.body);
  };

  // Express 5 passes rejected promises of async handlers on to the error handlers.
  router.all(
    MCP_PATH,
    checkOrigin,
    authenticate,
    onlyPost,
    readBody,
    refuseDeepBody,
    refuseUnservedRevision,
    confirmCaller,
    checkScopes,
    handle,
  );

  // The database unreachable while finding or confirming the caller: the same 503 as a tool call the
  // outage stopped (unavailable.ts), with the request's id. The caller is looked up before the body is
  // read, so the body is read here for its id (unreadable: null).
  const unavailable: ErrorRequestHandler = (error, req, res, next) => {
    if (!isDatabaseUnavailable(error) || res.headersSent) return next(error);
    const answer = () => {
      // Labelled as an answered request is (checkScopes), which this one never reached.
      labelOperation(res, mcpOperation(Array.isArray(req.body) ? req.body : [req.body], registry.byName));
      sendAnswer(res, unavailableAnswer(jsonRpcIdOf(req.body)));
    };
    if (req.body !== undefined || req.method !== 'POST') return answer();
    parseJson(req, res, answer);
  };
  router.use(MCP_PATH, unavailable);

  // A body the parser refuses (not JSON: a JSON-RPC parse error; too large: 413; a bad charset or
  // encoding: 415 or 400) is answered as a JSON-RPC error by the app's last error handler (src/http-errors.ts).
  return router;
}

function sendAnswer(res: Response, answer: UnavailableAnswer): void {
  res.writeHead(answer.status, answer.headers).end(answer.body);
}

function webAnswer(answer: UnavailableAnswer): globalThis.Response {
  return new globalThis.Response(answer.body, { status: answer.status, headers: answer.headers });
}

/**
 * Revisions before 2025-06-18 have no structuredContent, and a request without the revision header is
 * read as 2025-03-26 (the header came with 2025-06-18). Revisions are dates, so they compare as text.
 */
function withoutStructuredContent(revision: string | string[] | undefined): boolean {
  return revision === undefined || (typeof revision === 'string' && revision < '2025-06-18');
}

/** DNS rebinding: a browser page may reach us only from our own origin or from a local (loopback) one. */
function originAllowed(origin: string, ownOrigin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin === ownOrigin) return true;
  return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOSTS.has(url.hostname);
}

/** The request's plain tool call (direct-call.ts), worked out once per request. */
function plainCallOf(req: Request, res: Response): PlainToolCall | undefined {
  if (!('plainCall' in res.locals)) res.locals.plainCall = plainToolCall(req.body, req.headers);
  return res.locals.plainCall;
}

function singleToolCall(
  body: unknown,
  tools: ReadonlyMap<string, ToolDefinition>,
): ToolDefinition | undefined {
  const message = body as { method?: unknown; params?: { name?: unknown } } | undefined;
  if (Array.isArray(body) || message?.method !== 'tools/call') return undefined;
  const name = message.params?.name;
  return typeof name === 'string' ? tools.get(name) : undefined;
}

const MCP_METHODS = new Set([
  'initialize',
  'notifications/initialized',
  'ping',
  'tools/list',
  'resources/list',
  'prompts/list',
  'server/discover',
]);

/** The metrics label of an MCP request: the operation of the tool called, else the JSON-RPC method (only the ones MCP defines). */
function mcpOperation(messages: unknown[], tools: ReadonlyMap<string, ToolDefinition>): string {
  if (messages.length !== 1) return 'batch';
  const message = messages[0] as { method?: unknown; params?: { name?: unknown } } | undefined;
  const method = typeof message?.method === 'string' ? message.method : '';
  if (method === 'tools/call') {
    // Labelled by operationId, like the REST door, so one operation's series sit side by side.
    return singleToolCall(message, tools)?.spec.operationId ?? 'tools/call';
  }
  return MCP_METHODS.has(method) ? method : 'other';
}
