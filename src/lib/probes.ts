// Requests an orchestrator or a metrics scraper sends every few seconds whatever the load (liveness and
// readiness probes, Prometheus scrapes on the main port): they are not traffic. The access log, the traces and
// the memory reducer leave them out.
const PROBE_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export function isProbe(req: { url?: string }): boolean {
  return PROBE_PATHS.has(req.url ?? '');
}
