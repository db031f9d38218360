// OpenTelemetry export of traces (HTTP server and client, express, pg spans) over OTLP/HTTP, only when
// OTEL_EXPORTER_OTLP_ENDPOINT is set. Off, none of the SDK is even loaded. The SDK reads the standard
// OTEL_* variables itself (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*, headers, …).
import type { Config } from '../config/index.ts';
import { isProbe } from './probes.ts';

export interface Tracing {
  /** Flushes the spans still buffered and stops the exporter; call last on shutdown. */
  shutdown(): Promise<void>;
}

/**
 * Must run before the service's own modules are imported (main.ts imports them afterwards): the
 * instrumentations patch express and pg as they load, and ESM modules only through the loader hook
 * registered here.
 */
export async function startTracing(config: Pick<Config, 'otlpEndpoint'>): Promise<Tracing | undefined> {
  if (!config.otlpEndpoint) return undefined;
  const { register } = await import('node:module');
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
  const [
    { NodeSDK },
    { OTLPTraceExporter },
    { HttpInstrumentation },
    { ExpressInstrumentation },
    { PgInstrumentation },
  ] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  const sdk = new NodeSDK({
    serviceName: 'localization-service',
    // Appends /v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT, as the specification says.
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      new HttpInstrumentation({
        // Probes and scrapes every few seconds would drown the traces that matter.
        ignoreIncomingRequestHook: isProbe,
      }),
      new ExpressInstrumentation(),
      new PgInstrumentation(),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
