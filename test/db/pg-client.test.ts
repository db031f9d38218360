// The pool's client (src/db/orm.ts) reorders pg's promise form so that the callback exists before the query;
// these hold that every form of a query still answers as pg's own does.
import type { Pool, PoolClient, QueryResult } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestOrm } from '../support/orm.ts';

const db = useTestOrm();
let client: PoolClient;

beforeAll(async () => {
  const pool = (await db.orm().em.getConnection().getNativeClient()) as Pool;
  client = await pool.connect();
});
afterAll(() => client?.release());

describe('the pool client', () => {
  it('is the callback-first client, and its promise form resolves rows with parameters', async () => {
    expect(client.constructor.name).toBe('CallbackFirstClient');
    const result = await client.query('select $1::int + 1 as n', [41]);
    expect(result.rows).toEqual([{ n: 42 }]);
  });

  it("rejects a failing statement with PostgreSQL's error, and the connection stays usable", async () => {
    await expect(client.query('select * from no_such_table')).rejects.toMatchObject({ code: '42P01' });
    expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });

  it('throws at once for a missing statement, as pg does', () => {
    expect(() => client.query(undefined as never)).toThrow(TypeError);
  });

  it('calls a callback given as an argument or on the query config, as pg does', async () => {
    const byArgument = await new Promise<QueryResult>((resolve, reject) =>
      client.query('select 2 as two', [], (error, result) => (error ? reject(error) : resolve(result))),
    );
    expect(byArgument.rows).toEqual([{ two: 2 }]);
    const byConfig = await new Promise<QueryResult>((resolve, reject) => {
      const config = {
        text: 'select 3 as three',
        callback: (error: Error | null, result: QueryResult) => (error ? reject(error) : resolve(result)),
      };
      client.query(config as never);
    });
    expect(byConfig.rows).toEqual([{ three: 3 }]);
  });
});
