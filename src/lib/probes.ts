// Requests an orchestrator or a metrics scraper sends every few seconds whatever the load: they are not
// traffic. The traces and the memory reducer leave all of them out; the access log leaves out the health
// probes only, so that a scrape of /metrics with a wrong token still shows there.
const HEALTH_PROBE_PATHS = new Set(['/healthz', '/readyz']);
const METRICS_PATH = '/metrics';

/** A liveness or readiness probe. */
export function isHealthProbe(req: { url?: string }): boolean {
  return HEALTH_PROBE_PATHS.has(req.url ?? '');
}

/** A health probe or a Prometheus scrape on the main port. */
export function isProbe(req: { url?: string }): boolean {
  return isHealthProbe(req) || req.url === METRICS_PATH;
}
