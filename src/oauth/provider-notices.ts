// oidc-provider writes its notices with console.info and console.warn as plain text ("oidc-provider
// WARNING: …", coloured on a terminal), which would be the only lines of the service's output that are not
// JSON log records: a log shipper parsing JSON lines drops or mangles them. They go to the logger instead.
// The interception is process-wide (oidc-provider calls the global console); every provider the process
// creates routes its notices to the logger of the latest one (tests run several services in one process).
import { stripVTControlCharacters } from 'node:util';
import type { Logger } from '../lib/logger.ts';

const NOTICE = /^oidc-provider (NOTICE|WARNING): ([\s\S]*)$/;

/**
 * Our rate limiter reads the token endpoint's form body before oidc-provider does (it limits by client id,
 * src/oauth/rate-limits.ts), and oidc-provider then parses that same buffer. It warns about it once, as if it
 * were a mistake; it is the design, so it is logged at debug only.
 */
const EXPECTED = ['already parsed request body detected'];

let logger: Logger | undefined;

export function routeProviderNotices(to: Logger): void {
  if (!logger) {
    for (const method of ['info', 'warn'] as const) {
      const original = console[method];
      console[method] = (...args: unknown[]) => {
        const match =
          typeof args[0] === 'string' && args.length === 1
            ? NOTICE.exec(stripVTControlCharacters(args[0]))
            : null;
        if (!match || !logger) return original.apply(console, args);
        const [, kind, message = ''] = match;
        const level = EXPECTED.some((text) => message.startsWith(text))
          ? 'debug'
          : kind === 'WARNING'
            ? 'warn'
            : 'info';
        try {
          logger[level]({ component: 'oidc-provider' }, message);
        } catch {
          // That logger's destination is closed: its service stopped while another runs on (tests).
          original.apply(console, args);
        }
      };
    }
  }
  logger = to;
}
