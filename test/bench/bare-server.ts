// A baseline for the benchmark: a bare node:http server with the plain `pg` driver that runs, per request,
// the statements given in BARE_STATEMENTS (JSON: [{ name?, text, values }]; a name makes it a prepared statement)
// one after the other and answers the rows of the last one as JSON. No framework, no ORM, no validation.
import { createServer } from 'node:http';
import pg from 'pg';

const statements = JSON.parse(process.env.BARE_STATEMENTS ?? '[]') as {
  name?: string;
  text: string;
  values: unknown[];
}[];
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });

const server = createServer(async (_req, res) => {
  try {
    let rows: unknown[] = [];
    for (const s of statements) rows = (await pool.query(s)).rows;
    const body = JSON.stringify({ items: rows });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(`BARE_LISTENING ${typeof address === 'object' && address ? address.port : 0}`);
});
process.once('SIGTERM', () => {
  server.close();
  void pool.end();
});
