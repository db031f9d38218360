import express, { type Request, type Response, type Router } from 'express';
import type { OpenAPIBackend, Operation, ParsedRequest } from 'openapi-backend';
import type { ServiceContext } from '../context.ts';
import { bearerToken } from '../lib/bearer.ts';
import { labelOperation } from '../lib/metrics.ts';
import { MAX_REQUEST_BODY_BYTES } from './limits.ts';
import type { OperationResponse, Pipeline } from './pipeline.ts';
import { problems, sendProblem } from './problem.ts';

/**
 * The REST door: openapi-backend's router matches the request to an operation of openapi.yaml (404 / 405
 * from the same document) and parses its parameters; the pipeline does the rest. Request validation happens
 * inside the pipeline, after authentication, so that REST and MCP validate identically and an anonymous
 * caller learns nothing from a 400. openapi-backend's own handleRequest is not used: it parses each request
 * twice and runs a security step that could only say yes here (authentication is the pipeline's), about
 * 8% of a read (docs/performance.md).
 */
export function createRestRouter(service: ServiceContext, api: OpenAPIBackend, pipeline: Pipeline): Router {
  const router = express.Router();
  router.use(
    express.json({ limit: MAX_REQUEST_BODY_BYTES, type: ['application/json', 'application/*+json'] }),
  );

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
    for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, value);
    if (result.body === undefined) {
      res.status(result.status).end();
      return;
    }
    res.status(result.status);
    res.type(result.status >= 400 ? 'application/problem+json' : 'application/json');
    res.send(JSON.stringify(result.body));
  };

  const operationHandler = async (
    operation: Operation,
    parsed: ParsedRequest,
    req: Request,
    res: Response,
  ) => {
    const bearer = bearerToken(req.headers.authorization);
    const operationId = operation.operationId!;
    labelOperation(res, operationId);
    const result = await pipeline.execute({
      operationId,
      params: (parsed.params ?? {}) as Record<string, string>,
      query: parsed.query ?? {},
      body: req.body,
      headers: { 'if-match': req.headers['if-match'], 'if-none-match': req.headers['if-none-match'] },
      bearer,
      door: 'rest',
      meta: { ip: req.ip, userAgent: req.headers['user-agent'], requestId: String(req.id ?? '') },
    });
    send(res, operationId, result);
  };

  router.use((req, res, next) => {
    const request = {
      method: req.method,
      path: req.baseUrl + req.path,
      query: req.query as Record<string, string | string[]>,
      headers: req.headers as Record<string, string | string[]>,
      body: req.body,
    };
    let operation: Operation;
    try {
      operation = api.router.matchOperation(request, true);
    } catch (error) {
      // As openapi-backend answers a request no operation matches: 405 when the path has other methods.
      if (error instanceof Error && error.message.startsWith('405')) {
        return sendProblem(res, problems.methodNotAllowed(allowedMethods(api, request.path)));
      }
      return sendProblem(res, problems.notFound('No such endpoint.'));
    }
    let parsed: ParsedRequest;
    try {
      parsed = api.router.parseRequest(request, operation);
    } catch (error) {
      return next(error);
    }
    operationHandler(operation, parsed, req, res).catch(next);
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
