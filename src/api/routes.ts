// The REST door's route table: the operations of openapi.yaml, each path template's pattern built once.
import type { OpenAPIRouter, Operation } from 'openapi-backend';

/** An operation of openapi.yaml a request matched, with its path parameters (percent-decoded). */
export interface MatchedRoute {
  operation: Operation;
  params: Record<string, string>;
}

/**
 * The REST door's router: the same matching as openapi-backend's matchOperation (the exact path first,
 * then the templates by specificity, the most literal characters first, the first one with the request's
 * method), with each template's pattern built once. openapi-backend turns every path template of the
 * document into a RegExp on every match (about 40 per request), and its parseRequest compiles the matched
 * template again to read the path parameters, clones the headers and the query with lodash and parses
 * cookies the pipeline never reads; here the pattern that matched also captures the parameters. Undefined
 * when no operation takes the request (the caller asks openapi-backend's router for its 404 / 405).
 */
export type RouteMatcher = (method: string, path: string) => MatchedRoute | undefined;

export function precompiledRoutes(router: OpenAPIRouter, operations: Operation[]): RouteMatcher {
  const escapeLiteral = (literal: string) => literal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const routes = operations
    .map((operation) => ({
      operation,
      names: [...operation.path.matchAll(/\{([^}]+)\}/g)].map((found) => found[1]!),
      pattern: new RegExp(
        `^${operation.path
          .split(/\{[^}]+\}/)
          .map(escapeLiteral)
          .join('([^/]+)')}$`,
      ),
      specificity: operation.path.replace(/\{.*?\}/g, '').length,
    }))
    .sort((a, b) => b.specificity - a.specificity);
  return (method, path) => {
    const normalized = router.normalizeRequest({ method, path, headers: {} });
    const relative = router.normalizePath(normalized.path);
    const exact = routes.find(
      (r) => r.operation.path === relative && r.operation.method === normalized.method,
    );
    if (exact) return { operation: exact.operation, params: {} };
    for (const route of routes) {
      if (route.operation.method !== normalized.method) continue;
      const found = route.pattern.exec(relative);
      if (!found) continue;
      const params: Record<string, string> = {};
      // decodeURIComponent throws a URIError on broken percent-encoding, as openapi-backend's parser does;
      // the door answers it as a client error.
      route.names.forEach((name, i) => {
        params[name] = decodeURIComponent(found[i + 1]!);
      });
      return { operation: route.operation, params };
    }
    return undefined;
  };
}
