// `npm run bench`: not a test. Measures the service (started as `npm start` starts it, in its own process)
// with wrk (another process) against baselines (more processes), each comparison in alternating rounds,
// and writes the table into docs/performance.md between the bench markers.
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench
//   BENCH_ROUNDS (5), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3): round shape;
//   BENCH_SCALE=ci|full: also grow a second database (npm run bench:seed's generator) and compare on it;
//   BENCH_CPU_PROF=<dir>: the service writes a V8 CPU profile there when it stops;
//   BENCH_WRITE_DOC=0: print only;
//   BENCH_LOG_LEVEL=info: the service with request logging on, as an installation runs by default (warn otherwise).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Comparison, compare, type Side, settings } from './compare.ts';
import { type Child, listeningUrl, startBare, startBareOidc, startService } from './processes.ts';
import { FULL_SCALE, type SeedSizes } from './seed.ts';
import {
  admin,
  type BenchDatabase,
  benchServerUrl,
  databases,
  listStatement,
  mcpListProjects,
  pipelineStatements,
  prepareDatabase,
  refreshChain,
  refreshTokenSource,
} from './setup.ts';
import type { Target } from './wrk.ts';

const serverUrl = benchServerUrl();

const CI_SCALE: SeedSizes = {
  users: 20_000,
  organizations: 2_000,
  membersPerOrganization: 5,
  projects: 40_000,
  glossaries: 500,
  entriesPerGlossary: 200,
  bigProjects: 10_000,
  bigMembers: 10_000,
  bigOtherLists: 1_000,
};
const scale =
  process.env.BENCH_SCALE === 'full' ? FULL_SCALE : process.env.BENCH_SCALE === 'ci' ? CI_SCALE : undefined;

const work = mkdtempSync(join(tmpdir(), 'l10n-bench-'));
// The compile cache as an install leaves it (npm's postinstall runs the same script): in a checkout edited
// since `npm ci`, the edited modules would otherwise be stripped at the service's start, and the RSS after
// start would include Node's TypeScript stripper, which no installed service carries.
execFileSync(process.execPath, [join(import.meta.dirname, '..', '..', 'src', 'compile-cache.mjs')], {
  stdio: 'inherit',
});
const children: Child[] = [];

async function startBenchService(db: BenchDatabase, env: Record<string, string> = {}) {
  const cpuProf = process.env.BENCH_CPU_PROF;
  const service = await startService({
    databaseUrl: db.url,
    dataDir: mkdtempSync(join(work, 'data-')),
    // Rate-limit counters in memory whatever the bench's environment holds (an empty setting is an absent
    // one), unless a comparison asks for Redis.
    env: { REDIS_URL: '', ...env },
    nodeArgs: [
      ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : []),
      // For trying a V8 setting on the service alone, e.g. BENCH_NODE_FLAGS=--max-semi-space-size=16.
      ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean),
    ],
  });
  children.push(service.child);
  return service;
}

async function startBareServer(db: BenchDatabase, statements: Parameters<typeof startBare>[1]) {
  const child = await startBare(db.url, statements);
  children.push(child);
  return listeningUrl(child);
}

/** Refuses to measure an error path: the target must answer 200 first. */
async function check(target: Target): Promise<Target> {
  const response = await fetch(target.url, {
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
  });
  if (response.status !== 200)
    throw new Error(`${target.url} answers ${response.status}: ${await response.text()}`);
  return target;
}

const results: Comparison[] = [];
// BENCH_ONLY=rest,refresh runs only the comparisons whose title holds one of the words (for trying a change).
const only = process.env.BENCH_ONLY?.toLowerCase()
  .split(',')
  .map((word) => word.trim());
const wanted = (title: string) => !only || only.some((word) => title.toLowerCase().includes(word));
async function measure(...args: Parameters<typeof compare>): Promise<void> {
  if (!wanted(args[0])) return;
  results.push(await compare(...args));
}
const notes: string[] = [];
try {
  const db = await prepareDatabase(serverUrl, 'small');
  const service = await startBenchService(db);
  const auth = { authorization: `Bearer ${db.token}` };
  const rssIdle = service.child.rssMb();
  const projects = await check({ url: `${service.url}/api/v1/accounts/bench/projects`, headers: auth });

  const bareList = await startBareServer(db, [listStatement(db)]);
  const bareListPrepared = await startBareServer(db, [{ name: 'list', ...listStatement(db) }]);
  const barePipeline = await startBareServer(db, pipelineStatements(db));

  const rest: Side = { name: 'REST list projects', target: projects };
  await measure(
    'REST read vs bare pg (one query)',
    { name: 'bare node:http + pg, 1 query', target: { url: bareList } },
    rest,
    {
      aim: 0.5,
    },
  );
  // The one query above is sent as the plain driver sends it; the service prepares its statements, so the
  // same query prepared is the ceiling that choice itself sets.
  await measure(
    'REST read vs bare pg (one query, prepared)',
    { name: 'bare node:http + pg, 1 prepared query', target: { url: bareListPrepared } },
    rest,
    {},
  );
  await measure(
    'REST read vs bare pg (same statements)',
    { name: 'bare node:http + pg, same 2 prepared statements', target: { url: barePipeline } },
    rest,
    { aim: 0.9 },
  );
  await measure(
    'p99 at 32 connections',
    { name: 'bare node:http + pg, same 2 prepared statements', target: { url: barePipeline } },
    rest,
    {
      latencyAim: 25,
      connections: 32,
    },
  );

  // A multi-instance installation keeps its rate-limit counters in Redis (REDIS_URL); every other row runs
  // the service with them in memory, as the embedded default does. With BENCH_REDIS_URL, the same read on an
  // instance that counts in that Redis: what a production instance pays for sharing its limits.
  const redisTitle = 'REST read, rate-limit counters in Redis vs in memory';
  if (process.env.BENCH_REDIS_URL && wanted(redisTitle)) {
    const counting = await startBenchService(db, { REDIS_URL: process.env.BENCH_REDIS_URL });
    await measure(
      redisTitle,
      rest,
      {
        name: 'REST list projects, REDIS_URL',
        target: await check({ url: `${counting.url}/api/v1/accounts/bench/projects`, headers: auth }),
      },
      {},
    );
    await counting.child.stop();
  }

  const mcp = await check(mcpListProjects(service.url, auth));
  await measure(
    'MCP 2025-06-18 tools/call vs REST',
    rest,
    { name: 'MCP 2025-06-18 tools/call list_projects', target: mcp },
    { aim: 0.9 },
  );

  const modern = await check(mcpListProjects(service.url, auth, '2026-07-28'));
  await measure(
    'MCP 2026-07-28 tools/call vs REST',
    rest,
    { name: 'MCP 2026-07-28 tools/call list_projects', target: modern },
    { aim: 0.9 },
  );
  // What answering plain calls directly (src/mcp/direct-call.ts) is worth: the same call on an instance that
  // sends every MCP request through the SDK.
  const viaSdkTitle = 'MCP 2026-07-28 tools/call through the SDK vs directly';
  if (wanted(viaSdkTitle)) {
    const viaSdk = await startBenchService(db, { MCP_DIRECT_TOOL_CALLS: 'false' });
    await measure(
      viaSdkTitle,
      { name: 'MCP 2026-07-28 tools/call, direct', target: modern },
      {
        name: 'MCP 2026-07-28 tools/call, through the SDK',
        target: await check(mcpListProjects(viaSdk.url, auth, '2026-07-28')),
      },
      {},
    );
    await viaSdk.child.stop();
  }

  // A version never changes, so an instance keeps the text of those it has read (GLOSSARY_CACHE_MB) and the
  // rows above measure repeated reads of one version. The first read of a version on an instance costs what
  // an instance without the cache pays on every read: the reference rows below.
  const uncachedTitle = (entries: number) =>
    `Glossary read, ${entries} entries: without the version cache vs with`;
  const uncached = [200, 5000].some((entries) => wanted(uncachedTitle(entries)))
    ? await startBenchService(db, { GLOSSARY_CACHE_MB: '0' })
    : undefined;
  for (const [account, entries, rpsAim] of [
    ['bench', 200, 1000],
    ['bench-glossary', 5000, 100],
  ] as const) {
    const glossary = await check({
      url: `${service.url}/api/v1/accounts/${account}/glossary`,
      headers: auth,
    });
    const bare = await startBareServer(db, [
      {
        text: `select e.* from glossary_entries e join glossary_versions v on v.id = e.glossary_version_id
                join accounts a on a.id = v.account_id
               where a.handle = $1 and v.version = (select max(version) from glossary_versions where account_id = a.id)
               order by e.position`,
        values: [account],
      },
    ]);
    await measure(
      `Glossary read, ${entries} entries`,
      { name: 'bare node:http + pg, entries query', target: { url: bare } },
      { name: `REST get glossary (${entries})`, target: glossary },
      { rpsAim },
    );
    if (uncached)
      await measure(
        uncachedTitle(entries),
        { name: `REST get glossary (${entries})`, target: glossary },
        {
          name: `REST get glossary (${entries}), GLOSSARY_CACHE_MB=0`,
          target: await check({ url: `${uncached.url}/api/v1/accounts/${account}/glossary`, headers: auth }),
        },
        {},
      );
  }
  await uncached?.child.stop();

  // The refresh grant: each connection follows its own chain of rotated refresh tokens (a token works once),
  // so every run starts from fresh tokens: one per connection, plus one for the request() call wrk makes
  // before the connections start (it takes a token that is never sent). Bare oidc-provider's chains are
  // renewed from fresh grants as they go, since its memory adapter slows down as a grant's chain grows and
  // the service does not (refreshChain in setup.ts).
  const chains = 11;
  const bareOidc = await startBareOidc();
  children.push(bareOidc.child);
  const ours = await refreshTokenSource(service.url, 'r');
  const bareRefresh = (client: 'static' | 'registered') => () => bareOidc.refreshTarget(chains, client);
  const ourRefresh: Side = {
    name: 'POST /oauth/token refresh_token',
    target: async () => refreshChain(`${service.url}/oauth/token`, ours.clientId, await ours.mint(chains)),
  };
  await measure(
    'Refresh grant vs bare oidc-provider',
    {
      name: 'bare oidc-provider 9, memory adapter',
      target: bareRefresh('static'),
    },
    ourRefresh,
    { aim: 0.6 },
  );
  // The same grant where bare oidc-provider's client is stored in its adapter, as registered clients are (all
  // of ours): oidc-provider then reads it and hashes its metadata to find its cached Client on every grant.
  await measure(
    'Refresh grant vs bare oidc-provider, client registered',
    {
      name: 'bare oidc-provider 9, memory adapter, client in the adapter',
      target: bareRefresh('registered'),
    },
    ourRefresh,
    {},
  );

  const served = results.filter(
    (r) => r.subject.startsWith('REST') || r.subject.startsWith('MCP') || r.subject.startsWith('POST'),
  );
  const requests = served.reduce((sum, r) => sum + r.subjectRequests, 0);
  notes.push(
    `RSS of the service: ${rssIdle} MB after start, ${service.child.rssMb()} MB after about ${Math.round(requests / 1000)}k requests (aim: ≤ 150 MB idle, flat under load).`,
  );

  if (scale) {
    const big = await prepareDatabase(serverUrl, 'scaled', scale);
    const scaled = await startBenchService(big);
    const bigAuth = { authorization: `Bearer ${big.token}` };
    const on = (url: string, path: string) =>
      check({ url: `${url}${path}`, headers: path.includes('bench/') ? auth : bigAuth });
    await measure(
      'Scaled vs empty database: list projects',
      { name: 'empty database', target: await on(service.url, '/api/v1/accounts/bench/projects') },
      {
        name: 'scaled database',
        target: await check({ url: `${scaled.url}/api/v1/accounts/bench/projects`, headers: bigAuth }),
      },
      { aim: 1 / 1.2 },
    );
    for (const [what, path] of [
      ['projects', '/api/v1/accounts/seed-{org}/projects'],
      ['members', '/api/v1/organizations/seed-{org}/members'],
    ] as const) {
      await measure(
        `First page of ${what}: big vs typical organization`,
        {
          name: 'seed-typical (20)',
          target: await check({
            url: `${scaled.url}${path.replace('{org}', 'typical')}`,
            headers: bigAuth,
          }),
        },
        {
          name: 'seed-big',
          target: await check({ url: `${scaled.url}${path.replace('{org}', 'big')}`, headers: bigAuth }),
        },
        { aim: 1 / 1.2 },
      );
    }
    notes.push(`Scaled database: ${JSON.stringify(scale)}.`);
  }
} finally {
  for (const child of children.reverse()) await child.stop();
  for (const name of databases)
    await admin(serverUrl, `drop database if exists ${name} with (force)`).catch(() => {});
  rmSync(work, { recursive: true, force: true });
}

const errors = (r: Comparison) =>
  r.baselineErrors + r.subjectErrors
    ? ` (errors: baseline ${r.baselineErrors}, subject ${r.subjectErrors})`
    : '';
const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const table = [
  `Measured ${new Date().toISOString().slice(0, 16)} UTC: ${settings.rounds} alternating rounds of ${settings.seconds} s per side (after a ${settings.warmupSeconds} s warm-up of each), medians; wrk, 1 thread.`,
  '',
  '| Comparison | Conns | Baseline | req/s | p50 / p99 ms | Subject | req/s | p50 / p99 ms | Ratio (rounds) | Aim |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...results.map(
    (r) =>
      `| ${r.title} | ${r.connections} | ${r.baseline} | ${fmt(r.baselineRps)} | ${fmt(r.baselineP50)} / ${fmt(r.baselineP99)} | ` +
      `${r.subject} | ${fmt(r.subjectRps)} | ${fmt(r.subjectP50)} / ${fmt(r.subjectP99)} | ` +
      `${r.ratio.toFixed(2)} (${r.roundRatios.map((x) => x.toFixed(2)).join(', ')}) | ${r.forReference ? r.aim : `${r.aim}: ${r.meets ? 'meets' : '**below**'}`}${errors(r)} |`,
  ),
  '',
  ...notes.map((n) => `- ${n}`),
].join('\n');
console.log(`\n${table}`);

if (process.env.BENCH_WRITE_DOC !== '0') {
  const doc = join(import.meta.dirname, '..', '..', 'docs', 'performance.md');
  const text = readFileSync(doc, 'utf8');
  const start = '<!-- bench:start -->';
  const end = '<!-- bench:end -->';
  const before = text.slice(0, text.indexOf(start) + start.length);
  const after = text.slice(text.indexOf(end));
  writeFileSync(doc, `${before}\n${table}\n${after}`);
  console.log(`written to ${doc}`);
}
