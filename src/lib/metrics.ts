// Prometheus metrics of one service instance. Each instance has its own registry (not prom-client's global
// one), so several instances in one process (tests) never mix their numbers. Every label takes its values
// from a fixed set (door, operationId, grant type, limiter), never from free text, so series stay bounded.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler, type Response } from 'express';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { bearerToken } from './bearer.ts';

type MetricsDoor = 'rest' | 'mcp' | 'oauth' | 'web';

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

export interface Metrics {
  registry: Registry;
  /** Times every HTTP request; mount first. The door and operation come from the path and labelOperation(). */
  timeRequests: RequestHandler;
  /** A token issued (`issued`) or refused (`refused`, with the OAuth error code) at the token endpoint. */
  tokenOutcome(grantType: unknown, outcome: 'issued' | 'refused', error?: string): void;
  /** A request a rate limiter turned away with 429. */
  rateLimited(limiter: string): void;
  /** An MCP tools/call, by the way it was served: `direct` (a plain call, src/mcp/direct-call.ts) or the `sdk`. */
  mcpToolCall(path: 'direct' | 'sdk'): void;
  /** A glossary version's entries read from this instance's cache (`hit`) or from the database (`miss`). */
  glossaryCacheRead(result: 'hit' | 'miss'): void;
  /** A write run again from the start after losing a race (src/api/pipeline.ts), and why. */
  operationRetried(operation: string, reason: 'deadlock' | 'row-gone' | 'membership-changed'): void;
  /** The exposition, for GET /metrics. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

/** Sets the operation label of this request's duration (an operationId, a tool, an OAuth endpoint). */
export function labelOperation(res: Response, operation: string): void {
  res.locals.metricsOperation = operation;
}

const GRANT_TYPES = new Set(['authorization_code', 'refresh_token', 'client_credentials']);

export function createMetrics(options: { poolStats: () => Promise<PoolStats | undefined> }): Metrics {
  const registry = new Registry();
  // Process CPU, memory, handles, GC and the event-loop delay (nodejs_eventloop_lag_* from perf_hooks).
  collectDefaultMetrics({ register: registry });

  const requestDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by door (rest, mcp, oauth, web), operation and status code',
    labelNames: ['door', 'operation', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'oauth_tokens_total',
    help: 'Token endpoint outcomes by grant type: issued, or refused with the OAuth error code',
    labelNames: ['grant_type', 'outcome', 'error'] as const,
    registers: [registry],
  });
  const rejections = new Counter({
    name: 'rate_limit_rejections_total',
    help: 'Requests answered 429 by a rate limiter, by limiter',
    labelNames: ['limiter'] as const,
    registers: [registry],
  });
  const toolCalls = new Counter({
    name: 'mcp_tool_calls_total',
    help: 'MCP tools/call requests by how they were served: direct (plain calls) or sdk',
    labelNames: ['path'] as const,
    registers: [registry],
  });
  const retries = new Counter({
    name: 'operation_retries_total',
    help: 'Writes run again from the start after losing a race, by operation and reason (deadlock, row-gone, membership-changed)',
    labelNames: ['operation', 'reason'] as const,
    registers: [registry],
  });
  const glossaryReads = new Counter({
    name: 'glossary_cache_reads_total',
    help: "Glossary version reads by where the entries came from: this instance's cache (hit) or the database (miss)",
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const pool = (name: string, help: string, pick: (s: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        const stats = await options.poolStats();
        if (stats) this.set(pick(stats));
      },
    });
  pool('db_pool_connections', 'Open PostgreSQL connections of this instance', (s) => s.total);
  pool('db_pool_connections_idle', 'Open PostgreSQL connections not in use', (s) => s.idle);
  pool('db_pool_waiting_requests', 'Queries waiting for a free PostgreSQL connection', (s) => s.waiting);
  pool('db_pool_connections_max', 'Most PostgreSQL connections this instance opens', (s) => s.max);

  return {
    registry,
    timeRequests(req, res, next) {
      const start = process.hrtime.bigint();
      // A response emits `close` once, after `finish` when its answer was sent whole, and alone when it was
      // not (status "aborted": the client went away, the request timed out, or a shutdown cut it off).
      res.once('close', () => {
        const seconds = Number(process.hrtime.bigint() - start) / 1e9;
        const door = doorOf(req.originalUrl);
        const operation =
          res.locals.metricsOperation ??
          (req.route ? `${req.method} ${req.baseUrl}${req.route.path}` : 'other');
        const status = res.writableFinished ? String(res.statusCode) : 'aborted';
        requestDuration.observe({ door, operation, status }, seconds);
      });
      next();
    },
    tokenOutcome(grantType, outcome, error) {
      const grant = typeof grantType === 'string' && GRANT_TYPES.has(grantType) ? grantType : 'other';
      tokens.inc({ grant_type: grant, outcome, error: outcome === 'refused' ? (error ?? 'unknown') : '' });
    },
    rateLimited(limiter) {
      rejections.inc({ limiter });
    },
    glossaryCacheRead(result) {
      glossaryReads.inc({ result });
    },
    operationRetried(operation, reason) {
      retries.inc({ operation, reason });
    },
    mcpToolCall(path) {
      toolCalls.inc({ path });
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

function doorOf(url: string): MetricsDoor {
  if (url.startsWith('/api/')) return 'rest';
  if (url === '/mcp' || url.startsWith('/mcp?') || url.startsWith('/mcp/')) return 'mcp';
  if (url.startsWith('/oauth/') || url.startsWith('/.well-known/')) return 'oauth';
  return 'web';
}

/**
 * GET /metrics behind `Authorization: Bearer <token>` when a token is configured. Both sides are hashed
 * first, so the comparison takes the same time whatever the length of what was sent.
 */
export function metricsEndpoint(metrics: Metrics, token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : createHash('sha256').update(token).digest();
  return async (req, res) => {
    if (expected) {
      const presented = bearerToken(req.headers.authorization) ?? '';
      const given = createHash('sha256').update(presented).digest();
      if (!timingSafeEqual(given, expected)) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
        res
          .status(401)
          .type('application/problem+json')
          .send(
            JSON.stringify({
              type: 'about:blank',
              title: 'Unauthorized',
              status: 401,
              detail: 'GET /metrics needs the metrics bearer token (METRICS_TOKEN).',
            }),
          );
        return;
      }
    }
    const { contentType, body } = await metrics.scrape();
    res.setHeader('Content-Type', contentType);
    res.setHeader('Cache-Control', 'no-store');
    res.send(body);
  };
}

/** A listener of its own for GET /metrics (METRICS_PORT), so the scraper needs no route through the load balancer. */
export async function startMetricsServer(
  metrics: Metrics,
  options: { host: string; port: number; token: string | undefined },
): Promise<{ port: number; close(): Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', metricsEndpoint(metrics, options.token));
  app.use((_req, res) => {
    res.status(404).type('text/plain').send('Only GET /metrics is served here.\n');
  });
  const server = await new Promise<Server>((resolve, reject) => {
    // express 5 calls this back on a failed listen too (a port in use), with the error: a failed start
    // naming the setting, not a listener without an address.
    const s = app.listen(options.port, options.host, (error?: Error) =>
      error
        ? reject(
            new Error(
              `cannot listen on HOST ${options.host} and METRICS_PORT ${options.port}: ${error.message}`,
            ),
          )
        : resolve(s),
    );
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
