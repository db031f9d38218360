import { type DestinationStream, pino } from 'pino';
import type { Config } from '../config/index.ts';
import { currentRequestId, currentTraceId } from './request-context.ts';

// Anything that can carry a credential is redacted at the logger, so no call site has to remember.
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  // The redirect after consent carries the authorization code.
  'res.headers.location',
  '*.client_secret',
  '*.password',
  '*.token',
  '*.apiKey',
  '*.refresh_token',
  '*.access_token',
  '*.code_verifier',
];

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream) {
  return pino(
    {
      level: config.logLevel,
      redact: { paths: REDACT, censor: '[redacted]' },
      // The request's ids on every line written while serving it. A logger that already carries a
      // traceId binding (pino-http's request logger) is not given a second one.
      mixin: (_object, _level, logger) => {
        const requestId = currentRequestId();
        const traceId = currentTraceId();
        if (!requestId) return {};
        return traceId && !('traceId' in logger.bindings()) ? { requestId, traceId } : { requestId };
      },
    },
    destination,
  );
}
export type { Logger } from 'pino';
