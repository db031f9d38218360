// What a service running in this process sends to PostgreSQL, seen at the `pg` driver: every statement
// (its text, values and prepared-statement name) while recording is on. For tests and benchmarks that
// count, explain or inspect the statements of a request.
import pg from 'pg';

export interface SentStatement {
  text: string;
  values: unknown[];
  /** Set when the statement went out as a named (prepared) statement. */
  name?: string;
  /** The connection it went out on (to leave out a test's own client). */
  client: pg.Client;
}

export interface StatementRecorder {
  /** What was sent while recording; clear it with `sent.length = 0`. */
  sent: SentStatement[];
  start(): void;
  stop(): void;
  /** Puts the driver back as it was. */
  restore(): void;
}

export function recordStatements(): StatementRecorder {
  const sent: SentStatement[] = [];
  let recording = false;
  const originalQuery = pg.Client.prototype.query;
  // biome-ignore lint/suspicious/noExplicitAny: the driver's overloads, passed through unchanged
  pg.Client.prototype.query = function (this: pg.Client, ...args: any[]) {
    const [config, values] = args;
    const text = typeof config === 'string' ? config : config?.text;
    if (recording && typeof text === 'string') {
      sent.push({ text, values: values ?? config?.values ?? [], name: config?.name, client: this });
    }
    return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof originalQuery;
  return {
    sent,
    start: () => {
      recording = true;
    },
    stop: () => {
      recording = false;
    },
    restore: () => {
      pg.Client.prototype.query = originalQuery;
    },
  };
}
