// Full pipeline (auth by token hash, scope, validation, role + policy, handler) against a baseline route
// that runs the same SQL with nothing in front, in the same process, one after the other.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Project } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { type BenchEnv, compare } from './harness.ts';

export async function benchRest(env: BenchEnv) {
  const orm = await openDatabase(env.databaseUrl);
  const baseline = express();
  baseline.get('/baseline', async (_req, res) => {
    const rows = await orm.em
      .fork()
      .find(Project, { account: env.accountId }, { orderBy: { id: 'asc' }, limit: 21 });
    res.json({ items: rows.slice(0, 20), nextCursor: null });
  });
  const server = baseline.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const baselineUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/baseline`;

  await compare(
    'REST pipeline vs baseline',
    ['baseline: same SQL, no pipeline', { url: baselineUrl }],
    [
      'GET /api/v1/accounts/{account}/projects',
      {
        url: `${env.service.url}/api/v1/accounts/${env.handle}/projects`,
        headers: { authorization: `Bearer ${env.token}` },
      },
    ],
    { label: 'pipeline throughput / baseline', aim: 0.5 },
  );
  server.close();
  await orm.close();
}
