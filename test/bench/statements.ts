// `npm run bench:statements`: how many SQL statements (and which) each hot request sends. Starts the service
// in this process on a bench database, records every statement at the `pg` driver while one request runs,
// and prints the count and the statements. Transaction control (begin, commit) counts: each is a round trip.
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:statements
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.ts';
import { startServer } from '../../src/server.ts';
import { freePort } from '../support/ports.ts';
import { recordStatements } from '../support/statement-recorder.ts';
import { admin, databases, mcpListProjects, prepareDatabase, refreshTokenSource } from './setup.ts';

const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  console.error('Set DATABASE_URL to a PostgreSQL server (any database on it).');
  process.exit(2);
}

const recorder = recordStatements();

const dir = mkdtempSync(join(tmpdir(), 'l10n-statements-'));
const db = await prepareDatabase(serverUrl, 'statements');
const port = await freePort();
const service = await startServer(
  loadConfig({
    NODE_ENV: 'development',
    PORT: String(port),
    BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: db.url,
    DATA_DIR: dir,
    LOG_LEVEL: 'silent',
    DEV_LOGIN: 'true',
  }),
);
const auth = { authorization: `Bearer ${db.token}` };

async function count(name: string, send: () => Promise<Response>) {
  await send(); // warm: first-use caches (policies, prepared metadata) are not what a hot request costs
  recorder.sent.length = 0;
  recorder.start();
  const response = await send();
  recorder.stop();
  await response.arrayBuffer();
  const recorded = recorder.sent.map((s) => s.text.replace(/\s+/g, ' ').trim());
  const commits = recorded.filter((s) => /^commit\b/i.test(s)).length;
  console.log(`\n${name}: HTTP ${response.status}, ${recorded.length} statements, ${commits} commits`);
  for (const s of recorded) console.log(`  - ${s.length > 160 ? `${s.slice(0, 157)}...` : s}`);
}

try {
  const get = (path: string) => () => fetch(`${service.url}${path}`, { headers: auth });
  await count('GET projects (personal account)', get('/api/v1/accounts/bench/projects'));
  await count('GET projects (organization)', get('/api/v1/accounts/bench-glossary/projects'));
  await count('GET members', get('/api/v1/organizations/bench-glossary/members'));
  await count('GET glossary (200 entries)', get('/api/v1/accounts/bench/glossary'));
  const { url: mcpUrl, ...mcpRequest } = mcpListProjects(service.url, auth);
  await count('MCP tools/call list_projects', () => fetch(mcpUrl, mcpRequest));
  const ours = await refreshTokenSource(service.url, 's');
  const tokens = await ours.mint(2);
  await count('POST /oauth/token (refresh grant)', () =>
    fetch(`${service.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: ours.clientId,
        refresh_token: tokens.shift()!,
      }).toString(),
    }),
  );
} finally {
  await service.stop();
  for (const name of databases) await admin(serverUrl, `drop database if exists ${name} with (force)`);
  rmSync(dir, { recursive: true, force: true });
}
