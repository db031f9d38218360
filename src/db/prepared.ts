import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import type { Orm } from './orm.ts';

// The statements the service sends on most requests (the target account, a list's page) cost PostgreSQL
// more to parse and plan than to run: measured in the bare server of `npm run bench`, the account statement
// and a page of projects answer 1.5x as often prepared as sent afresh each time. MikroORM inlines the values
// of a raw statement into its text, so it cannot prepare one; these go to its `pg` pool directly, as named
// statements that each pooled connection parses and plans once.

/**
 * A statement worth preparing, written as every other plain statement of the service is (`?` for each
 * value, in order), so the same statement also runs through MikroORM inside a write's transaction.
 * Name its columns: a prepared `select *` fails once a migration adds a column under a running instance.
 */
export interface PreparedStatement {
  /** The `?` form, for MikroORM's `execute`. */
  readonly text: string;
  /** The `$1, $2, …` form PostgreSQL prepares. */
  readonly numbered: string;
  /** Derived from the text, so two statements never share a name (which `pg` would refuse). */
  readonly name: string;
}

export function prepared(text: string): PreparedStatement {
  let n = 0;
  // The service's statements have no `?` other than their placeholders (no jsonb `?` operator).
  const numbered = text.replace(/\?/g, () => `$${++n}`);
  const name = `s${createHash('sha256').update(text).digest('base64url').slice(0, 16)}`;
  return { text, numbered, name };
}

export type RunPrepared = <Row>(statement: PreparedStatement, values: readonly unknown[]) => Promise<Row[]>;

/**
 * Runs prepared statements on the ORM's own pool (its type parsers too, so rows read as MikroORM's do), one
 * pooled connection per statement, outside any transaction (a statement that writes commits on its own).
 * With `prepare` off (for a pooler that cannot keep a statement on a connection, such as PgBouncer before
 * 1.21 in transaction mode) they are sent unnamed, still with their values as parameters.
 */
export function createRunPrepared(orm: Orm, prepare: boolean): RunPrepared {
  let pool: Pool | undefined;
  return async <Row>(statement: PreparedStatement, values: readonly unknown[]) => {
    pool ??= await orm.em.getConnection().getNativeClient();
    const result = await pool.query({
      ...(prepare ? { name: statement.name } : {}),
      text: statement.numbered,
      values: values as unknown[],
    });
    return result.rows as Row[];
  };
}
