import { ConnectionException } from '@mikro-orm/core';

// One answer to "is this error the database being unreachable?", for every door's error path: the
// operation pipeline (REST, MCP, pages), the OAuth server and the app's last error handler all answer such
// an error with 503 and Retry-After instead of 500, since retrying shortly is the right thing to do.

/** SQLSTATEs of a server that is going away or cannot take the connection now. */
const SQLSTATES = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, recovering)
  '53300', // too_many_connections
  '57014', // query_canceled: the statement ran past statement_timeout (orm.ts), the server is overloaded
]);
/** Socket errors on the way to the server. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** node-postgres reports a lost or unusable connection with these messages and no code. */
const MESSAGES = [
  /^Connection terminated/,
  /Client has encountered a connection error and is not queryable/,
  /^timeout exceeded when trying to connect/,
  /^Client was closed and is not queryable/,
  // The server did not answer a statement within query_timeout (orm.ts): it stopped answering.
  /^Query read timeout/,
  // A connection the server did not accept within connectionTimeoutMillis.
  /^timeout expired/,
  // /readyz's own bound (pingDatabase).
  /^the database did not answer within/,
];

/** Seconds a client is told to wait (Retry-After) while the database is unreachable. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/** What the client is told; a write cut off at COMMIT may or may not have been applied, so no promise. */
export const DATABASE_UNAVAILABLE_DETAIL = 'The database is unreachable for a moment; retry shortly.';

export function isDatabaseUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  const check = (e: unknown): boolean => {
    if (!e || typeof e !== 'object' || seen.has(e)) return false;
    seen.add(e);
    if (e instanceof ConnectionException) return true;
    const { code, message, cause, errors } = e as {
      code?: unknown;
      message?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    if (typeof code === 'string' && (code.startsWith('08') || SQLSTATES.has(code) || SOCKET_CODES.has(code)))
      return true;
    if (typeof message === 'string' && MESSAGES.some((pattern) => pattern.test(message))) return true;
    // MikroORM wraps the driver's error in `cause`; a failed connect to several addresses is an AggregateError.
    return check(cause) || (Array.isArray(errors) && errors.some(check));
  };
  return check(error);
}
