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
 * cookies the pipeline never reads; here the pattern that matched also captures the parameters.
 */
export interface RouteTable {
  /** The operation and its path parameters; undefined when no operation takes this method on this path. */
  match(method: string, path: string): MatchedRoute | undefined;
  /**
   * The methods some operation takes on this path (for a 405's Allow: HEAD wherever GET is), none for a
   * path of no operation.
   */
  methodsAt(path: string): string[];
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function precompiledRoutes(router: OpenAPIRouter, operations: Operation[]): RouteTable {
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
  const relativePath = (path: string) =>
    router.normalizePath(router.normalizeRequest({ method: 'get', path, headers: {} }).path);
  return {
    match(method, path) {
      const relative = relativePath(path);
      // HEAD is the GET of the same path without its body (RFC 9110 §9.3.2); Node leaves the body out.
      const wanted = method.trim().toLowerCase() === 'head' ? 'get' : method.trim().toLowerCase();
      const exact = routes.find((r) => r.operation.path === relative && r.operation.method === wanted);
      if (exact) return { operation: exact.operation, params: {} };
      for (const route of routes) {
        if (route.operation.method !== wanted) continue;
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
    },
    methodsAt(path) {
      const relative = relativePath(path);
      const taken = new Set(routes.filter((r) => r.pattern.test(relative)).map((r) => r.operation.method));
      if (taken.has('get')) taken.add('head');
      return METHODS.filter((method) => taken.has(method.toLowerCase()));
    },
  };
}
