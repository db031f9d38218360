import { type DestinationStream, type Logger, pino } from 'pino';
import type { Config } from '../config/index.ts';
import { currentRequestId, currentTraceId } from './request-context.ts';

/** The headers of a logged request or answer that carry a credential. */
const HEADER_REDACT = [
  'req.headers.authorization',
  // A proxy's credential, sent by clients behind one that authenticates them.
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  // The redirect after consent carries the authorization code.
  'res.headers.location',
];
// Anything that can carry a credential is redacted at the logger, so no call site has to remember.
const REDACT = [
  ...HEADER_REDACT,
  '*.client_secret',
  '*.password',
  '*.token',
  '*.apiKey',
  '*.refresh_token',
  '*.access_token',
  '*.code_verifier',
  // What Node's URL parser could not read (ERR_INVALID_URL): a connection string with its password.
  'err.input',
  // The command a Redis client's error quotes (ioredis): `HELLO 3 AUTH <user> <password>` when Redis
  // refuses the credentials of REDIS_URL. The command's name stays, for whoever reads the outage.
  'err.command.args',
];

/**
 * Query parameters whose value is a credential somewhere in OAuth or in our forms. A client that puts one in
 * a URL is refused (tokens belong in headers or bodies), but the request line is still logged, so the value
 * is replaced there. `state` is kept: it is a per-request correlation value bound to the client's own
 * storage, useless without it, and what one needs to trace a failed sign-in.
 */
const SECRET_PARAMETERS = new Set([
  'access_token',
  'refresh_token',
  'id_token',
  'id_token_hint',
  'code',
  'code_verifier',
  'client_secret',
  'client_assertion',
  'assertion',
  'token',
  'subject_token',
  'actor_token',
  'device_code',
  'user_code',
  'password',
  'csrf',
]);
const CENSOR = '[redacted]';

const isSecretParameter = (name: string) => SECRET_PARAMETERS.has(name.toLowerCase());

/** The URL with the value of every credential-carrying query parameter replaced, the rest untouched. */
function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // A malformed name is logged as sent; it cannot be one of ours.
      }
      if (eq < 0) return pair;
      if (isSecretParameter(name)) return `${rawName}=${CENSOR}`;
      return `${rawName}=${redactNestedUrl(pair.slice(eq + 1))}`;
    })
    .join('&');
  return `${url.slice(0, q + 1)}${redacted}${hash < 0 ? '' : url.slice(hash)}`;
}

/**
 * A parameter whose value is itself a URL or path with a query (a return path such as
 * `next=/invitations/answer?token=…`) carries that query's credentials too: redacted the same way.
 */
function redactNestedUrl(rawValue: string): string {
  let value: string;
  try {
    value = decodeURIComponent(rawValue.replace(/\+/g, ' '));
  } catch {
    return rawValue;
  }
  if (!value.includes('?')) return rawValue;
  const redacted = redactUrl(value);
  return redacted === value ? rawValue : encodeURIComponent(redacted);
}

/** A parsed query (express's req.query) with the same parameters redacted, at any depth of nesting. */
function redactQuery(query: unknown): unknown {
  if (!query || typeof query !== 'object') return query;
  if (Array.isArray(query)) return query.map(redactQuery);
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [
      name,
      isSecretParameter(name) ? CENSOR : typeof value === 'string' ? redactUrl(value) : redactQuery(value),
    ]),
  );
}

/** The request as logged (src/lib/access-log.ts): its URL and query without credentials. */
export function redactRequest<T extends { url?: unknown; query?: unknown }>(req: T): T {
  if (typeof req.url === 'string') req.url = redactUrl(req.url);
  if (req.query) req.query = redactQuery(req.query);
  return req;
}

export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream) {
  return pino(
    {
      level: config.logLevel,
      redact: { paths: REDACT, censor: CENSOR },
      // The request's ids on every line written while serving it.
      mixin: () => {
        const requestId = currentRequestId();
        const traceId = currentTraceId();
        if (!requestId) return {};
        return traceId ? { requestId, traceId } : { requestId };
      },
    },
    destination,
  );
}

/**
 * The logger of the request line (src/lib/access-log.ts), redacting only the header paths. That line is built
 * in one place with a fixed shape (`req` and `res` with their headers, `responseTime`), which no other path
 * of the logger's can match (`*.password` is a `password` member of a top-level value: `req.password`), so
 * the line comes out the same. pino's redaction walks every path for every top-level value of a line, the
 * message included: with all of them, building a REST read's line took 10.6 µs, with these 4.4 µs.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: { paths: HEADER_REDACT, censor: CENSOR } });
}

export type { Logger } from 'pino';
