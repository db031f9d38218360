import express, { type Request, type Response, type Router } from 'express';
import type { OpenAPIBackend } from 'openapi-backend';
import type { ServiceContext } from '../context.ts';
import { bearerToken } from '../lib/bearer.ts';
import { labelOperation } from '../lib/metrics.ts';
import { jsonOf } from '../lib/spliced-json.ts';
import { requireUtf8Body } from '../lib/utf8-body.ts';
import { MAX_REQUEST_BODY_BYTES } from './limits.ts';
import type { OperationResponse, Pipeline } from './pipeline.ts';
import { problems, sendProblem } from './problem.ts';
import type { MatchedRoute, RouteTable } from './routes.ts';

/** The bodies the REST door reads: JSON, also under a +json type (application/merge-patch+json). */
const JSON_TYPES = ['application/json', 'application/*+json'];

/** Whether the request has content (an empty body with Content-Length: 0 is the same as none). */
const carriesContent = (req: Request) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;

/**
 * The REST door: the route table matches the request to an operation of openapi.yaml and reads its path
 * parameters (404, or 405 with the methods the path has); the pipeline does the rest.
 * Request validation happens inside the pipeline, after authentication, so that REST and MCP validate
 * identically and an anonymous caller learns nothing from a 400. openapi-backend's own handleRequest is not
 * used: it parses each request twice and runs a security step that could only say yes here (authentication
 * is the pipeline's), about 8% of a read (docs/performance.md).
 */
export function createRestRouter(
  service: ServiceContext,
  api: OpenAPIBackend,
  routes: RouteTable,
  pipeline: Pipeline,
): Router {
  const router = express.Router();
  router.use(express.json({ limit: MAX_REQUEST_BODY_BYTES, type: JSON_TYPES, verify: requireUtf8Body }));

  const send = (res: Response, operationId: string, result: OperationResponse) => {
    if (service.config.validateResponses && result.status < 400 && result.body !== undefined) {
      const check = api.validateResponse(result.body, operationId, result.status);
      if (check.errors?.length) {
        service.logger.error({ operationId, errors: check.errors }, 'response does not match openapi.yaml');
        result = {
          status: 500,
          body: {
            type: 'https://docs.l10n.dev/problems/response-contract',
            title: 'Response does not match openapi.yaml',
            status: 500,
            detail: JSON.stringify(check.errors),
          },
        };
      }
    }
    // Written with Node's own calls: express's res.type and res.send cost about 3% of a read (a MIME
    // lookup, the charset parsed back out of the type it set, a freshness check). That check also turned
    // a read of a named version whose ETag the client sent into a 304, which the pipeline (and so MCP)
    // never did: whether a read is not modified is the handler's answer alone (etag.ts).
    res.statusCode = result.status;
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (result.body === undefined) {
      res.end();
      return;
    }
    // Encoded once, so the length comes from the bytes (measuring the text first would read a 2 MB
    // glossary twice).
    const body = Buffer.from(jsonOf(result.body));
    res.setHeader(
      'Content-Type',
      result.status >= 400 ? 'application/problem+json; charset=utf-8' : 'application/json; charset=utf-8',
    );
    res.setHeader('Content-Length', body.length);
    res.end(body);
  };

  const operationHandler = async ({ operation, params }: MatchedRoute, req: Request, res: Response) => {
    const bearer = bearerToken(req.headers.authorization);
    const operationId = operation.operationId!;
    labelOperation(res, operationId);
    const result = await pipeline.execute({
      operationId,
      params,
      // Express's query parser makes a new object per request; the pipeline copies it before coercing.
      query: req.query as Record<string, unknown>,
      body: req.body,
      headers: { 'if-match': req.headers['if-match'], 'if-none-match': req.headers['if-none-match'] },
      bearer,
      door: 'rest',
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
    });
    send(res, operationId, result);
  };

  router.use((req, res, next) => {
    const path = req.baseUrl + req.path;
    let route: MatchedRoute | undefined;
    try {
      route = routes.match(req.method, path);
    } catch (error) {
      return next(error); // a path parameter that is not valid percent-encoding
    }
    if (route?.operation.requestBody && carriesContent(req) && !req.is(JSON_TYPES)) {
      // Not read as JSON, the body would look absent (a string body sent with fetch is text/plain).
      return sendProblem(
        res,
        problems.unsupportedMediaType(
          `The body must be JSON: send it with Content-Type: application/json, not ${JSON.stringify(req.headers['content-type'] ?? 'none')}.`,
        ),
      );
    }
    if (!route) {
      // As openapi-backend answers a request no operation matches: 405 when the path has other methods.
      const methods = routes.methodsAt(path);
      return sendProblem(
        res,
        methods.length > 0 ? problems.methodNotAllowed(methods) : problems.notFound('No such endpoint.'),
      );
    }
    operationHandler(route, req, res).catch(next);
  });

  // Bodies the JSON parser refuses (malformed, too large, bad charset or encoding) and paths that are not
  // valid percent-encoding go on to the app's last error handler (src/http-errors.ts): problem+json.
  return router;
}
