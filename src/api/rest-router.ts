import express, { type Request, type Response, type Router } from 'express';
import type { Context, OpenAPIBackend } from 'openapi-backend';
import type { ServiceContext } from '../context.ts';
import { bearerToken } from '../lib/bearer.ts';
import { labelOperation } from '../lib/metrics.ts';
import { MAX_REQUEST_BODY_BYTES } from './limits.ts';
import type { OperationResponse, Pipeline } from './pipeline.ts';
import { problems, sendProblem } from './problem.ts';

/**
 * The REST door: openapi-backend routes the request to an operationId (404 / 405 from the same document),
 * the pipeline does the rest. Request validation happens inside the pipeline, after authentication, so
 * that REST and MCP validate identically and an anonymous caller learns nothing from a 400.
 */
export function createRestRouter(service: ServiceContext, api: OpenAPIBackend, pipeline: Pipeline): Router {
  const router = express.Router();
  router.use(
    express.json({ limit: MAX_REQUEST_BODY_BYTES, type: ['application/json', 'application/*+json'] }),
  );

  const send = (res: Response, operationId: string | undefined, result: OperationResponse) => {
    if (operationId && service.config.validateResponses && result.status < 400 && result.body !== undefined) {
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
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (result.body === undefined) {
      res.status(result.status).end();
      return;
    }
    res.status(result.status);
    res.type(result.status >= 400 ? 'application/problem+json' : 'application/json');
    res.send(JSON.stringify(result.body));
  };

  const operationHandler = async (c: Context, req: Request, res: Response) => {
    const bearer = bearerToken(req.headers.authorization);
    labelOperation(res, c.operation.operationId!);
    const result = await pipeline.execute({
      operationId: c.operation.operationId!,
      params: (c.request.params ?? {}) as Record<string, string>,
      query: c.request.query ?? {},
      body: req.body,
      headers: { 'if-match': req.headers['if-match'], 'if-none-match': req.headers['if-none-match'] },
      bearer,
      door: 'rest',
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
    });
    send(res, c.operation.operationId, result);
  };

  api.register({
    notFound: (_c: Context, _req: Request, res: Response) =>
      sendProblem(res, problems.notFound('No such endpoint.')),
    methodNotAllowed: (_c: Context, req: Request, res: Response) => {
      const allowed = allowedMethods(api, req.baseUrl + req.path);
      sendProblem(res, problems.methodNotAllowed(allowed));
    },
  });
  for (const operationId of pipeline.catalogue.operations.keys()) api.register(operationId, operationHandler);

  router.use((req, res, next) => {
    api
      .handleRequest(
        {
          method: req.method,
          path: req.baseUrl + req.path,
          query: req.query as Record<string, string | string[]>,
          headers: req.headers as Record<string, string | string[]>,
          body: req.body,
        },
        req,
        res,
      )
      .catch(next);
  });

  // Bodies the JSON parser refuses (malformed, too large, bad charset or encoding) and paths that are not
  // valid percent-encoding go on to the app's last error handler (src/http-errors.ts): problem+json.
  return router;
}

function allowedMethods(api: OpenAPIBackend, path: string): string[] {
  return ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => {
    try {
      return Boolean(api.router.matchOperation({ method, path, headers: {} }, true));
    } catch {
      return false;
    }
  });
}
