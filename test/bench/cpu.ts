// `npm run bench:cpu`: not a test. CPU time per request (user and system, read from /proc) of the service's
// hot requests and of the baselines (the bare same-statements server, bare oidc-provider's refresh grant),
// each under wrk. Throughput on a shared 2-core machine moves with whatever else runs; the CPU a request
// costs the process serving it moves less, so this is the measure for deciding whether a change to the hot
// path pays (still in alternating rounds, and with a median: it moves too).
//
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres npm run bench:cpu
//   CPU_BASE=<checkout>: also start the service from another checkout (a `git worktree` of the commit to
//     compare with, its node_modules linked) on the same database, and alternate the two in every round;
//   CPU_ONLY=rest,mcp,OAuth,refresh,bare: which requests (words of their names; `=<name>` for exactly one, so
//     that a CPU profile holds that request alone); CPU_ROUNDS (5), CPU_SECONDS (5):
//     round shape; the service's settings come from the environment (AUTH_CACHE_SECONDS=0: every request
//     looks its token up, the cost of a token the verified-caller cache does not hold);
//   CPU_ONLY=reads: instead, every read of the API (each GET operation of openapi.yaml, on data made for them),
//     to find a read that costs more than the rest (a hydrated entity, a second query);
//   CPU_CONNECTIONS (10); CPU_PROF=<dir>: every process measured writes a V8 CPU profile there when it stops
//     (node test/bench/profile-summary.ts <file> sums one by package).
// The PostgreSQL column is the CPU of every `postgres` process on this machine (user and system) per request:
// what a request costs the database, which shares the cores with the service here and is shared by every
// instance in production. It is empty when the database runs elsewhere. Background work (autovacuum, the
// checkpointer) lands on whichever request runs while it does.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCatalogue } from '../../src/api/catalogue.ts';
import { type Child, listeningUrl, startBare, startBareOidc, startService } from './processes.ts';
import {
  admin,
  benchServerUrl,
  databases,
  mcpListProjects,
  oauthAgent,
  pipelineStatements,
  prepareDatabase,
  refreshChain,
  refreshTokenSource,
} from './setup.ts';
import { type Target, wrk } from './wrk.ts';

const serverUrl = benchServerUrl();
const rounds = Number(process.env.CPU_ROUNDS ?? 5);
const seconds = Number(process.env.CPU_SECONDS ?? 5);
const connections = Number(process.env.CPU_CONNECTIONS ?? 10);
const profile = process.env.CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CPU_PROF}`] : [];
const only = process.env.CPU_ONLY?.split(',').map((word) => word.trim());

const work = mkdtempSync(join(tmpdir(), 'l10n-cpu-'));
const children: Child[] = [];

/**
 * A process's line in /proc: its command name and the fields after it (user and system CPU in ticks of 1/100
 * s at [11] and [12], those of the children it waited for at [13] and [14]).
 */
function procStat(pid: number | string): { command: string; fields: string[] } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const close = stat.lastIndexOf(')');
  return { command: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
}

/** User and system CPU of a process so far, in clock ticks. */
function cpuTicks(pid: number): [number, number] {
  const { fields } = procStat(pid);
  return [Number(fields[11]), Number(fields[12])];
}

/** User plus system CPU of every `postgres` process on this machine so far, exited ones included, in ticks. */
function postgresTicks(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: ReturnType<typeof procStat>;
    try {
      stat = procStat(entry);
    } catch {
      continue; // exited since the listing
    }
    if (stat.command !== 'postgres') continue;
    const { fields } = stat;
    // With the children's time (cutime, cstime): a backend or autovacuum worker that exits hands its time
    // to the postmaster that waits for it, so the total does not drop when one goes.
    total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return total;
}

interface Subject {
  name: string;
  pid: number;
  target: () => Promise<Target>;
}

const samples = new Map<string, { rps: number[]; user: number[]; sys: number[]; postgres: number[] }>();
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

try {
  const db = await prepareDatabase(serverUrl, 'cpu');
  const start = async (checkout: string | undefined, label: string) => {
    const { child, url } = await startService({
      databaseUrl: db.url,
      dataDir: mkdtempSync(join(work, 'data-')),
      nodeArgs: profile,
      checkout,
    });
    children.push(child);
    return { label, url, pid: child.process.pid! };
  };
  const services = [await start(undefined, 'this checkout')];
  if (process.env.CPU_BASE) services.unshift(await start(process.env.CPU_BASE, 'CPU_BASE'));

  const bare = await startBare(db.url, pipelineStatements(db), profile);
  children.push(bare);

  const bareOidc = await startBareOidc(profile);
  children.push(bareOidc.child);

  const auth = { authorization: `Bearer ${db.token}` };
  const subjects: Subject[] = [
    {
      name: 'bare node:http + pg, same 2 prepared statements',
      pid: bare.process.pid!,
      target: async () => ({ url: listeningUrl(bare) }),
    },
    {
      name: 'bare oidc-provider 9, memory adapter, refresh grant',
      pid: bareOidc.child.process.pid!,
      target: () => bareOidc.refreshTarget(11),
    },
  ];
  for (const service of services) {
    const suffix = services.length > 1 ? ` (${service.label})` : '';
    const refresh = await refreshTokenSource(service.url, `cpu${service.pid}`);
    const agent = await oauthAgent(service.url, `agent${service.pid}`);
    subjects.push(
      {
        name: `rest list projects${suffix}`,
        pid: service.pid,
        target: async () => ({ url: `${service.url}/api/v1/accounts/bench/projects`, headers: auth }),
      },
      ...(['bench', 'bench-glossary'] as const).map((account) => ({
        name: `rest get glossary (${account === 'bench' ? 200 : 5000} entries)${suffix}`,
        pid: service.pid,
        target: async () => ({ url: `${service.url}/api/v1/accounts/${account}/glossary`, headers: auth }),
      })),
      {
        name: `mcp 2026-07-28 tools/call list_projects${suffix}`,
        pid: service.pid,
        target: async () => mcpListProjects(service.url, auth, '2026-07-28'),
      },
      {
        name: `mcp 2026-07-28 tools/call list_projects, OAuth access token${suffix}`,
        pid: service.pid,
        target: async () => mcpListProjects(service.url, agent.auth, '2026-07-28', agent.handle),
      },
      {
        name: `refresh grant${suffix}`,
        pid: service.pid,
        target: async () =>
          refreshChain(`${service.url}/oauth/token`, refresh.clientId, await refresh.mint(11)),
      },
    );
  }
  if (only?.includes('reads')) {
    for (const service of services) subjects.push(...(await everyRead(service, auth, services.length > 1)));
  }
  const chosen = subjects.filter(
    (s) =>
      !only || only.some((word) => (word.startsWith('=') ? s.name === word.slice(1) : s.name.includes(word))),
  );

  for (let round = 0; round < rounds; round++) {
    for (const subject of chosen) {
      const target = await subject.target();
      await wrk(target, { seconds: 1, connections });
      const measured = await subject.target();
      const [user0, sys0] = cpuTicks(subject.pid);
      const postgres0 = postgresTicks();
      const result = await wrk(measured, { seconds, connections });
      const [user1, sys1] = cpuTicks(subject.pid);
      const postgres1 = postgresTicks();
      if (result.non2xx || result.socketErrors)
        throw new Error(
          `${subject.name}: ${result.non2xx} non-2xx answers, ${result.socketErrors} socket errors`,
        );
      const entry = samples.get(subject.name) ?? { rps: [], user: [], sys: [], postgres: [] };
      entry.rps.push(result.requestsPerSecond);
      entry.user.push(((user1 - user0) * 1e4) / result.requests);
      entry.sys.push(((sys1 - sys0) * 1e4) / result.requests);
      entry.postgres.push(((postgres1 - postgres0) * 1e4) / result.requests);
      samples.set(subject.name, entry);
    }
  }
} finally {
  for (const child of children.reverse()) await child.stop();
  for (const name of databases)
    await admin(serverUrl, `drop database if exists ${name} with (force)`).catch(() => {});
  rmSync(work, { recursive: true, force: true });
}

/**
 * A subject for every GET operation of the API, each path filled in with data this makes first (a voice
 * version, a model, an organization with an invitation, tokens), so that every read answers 200.
 */
async function everyRead(
  service: { url: string; pid: number; label: string },
  auth: Record<string, string>,
  labelled: boolean,
): Promise<Subject[]> {
  const api = `${service.url}/api/v1`;
  const org = `reads-${service.pid}`;
  const made: [method: string, path: string, body: object][] = [
    ['PUT', '/accounts/bench/voice', { changeNote: 'for the reads' }],
    ['POST', '/accounts/bench/models', { handle: `m${service.pid}`, model: 'openai:gpt-4o' }],
    ['POST', '/organizations', { handle: org, displayName: 'Reads' }],
    ['POST', `/organizations/${org}/invitations`, { email: `reads-${service.pid}@example.com` }],
    ...Array.from({ length: 5 }, (_, i): [string, string, object] => [
      'POST',
      '/accounts/bench/tokens',
      { name: `r${i}`, scopes: ['project:read'] },
    ]),
  ];
  for (const [method, path, body] of made) {
    const answer = await fetch(api + path, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  }
  const fill: Record<string, string> = {
    account: 'bench',
    project: 'p0',
    modelHandle: `m${service.pid}`,
    org,
  };
  const { operations } = await loadCatalogue();
  const paths = [...operations.values()].filter((spec) => spec.method === 'get').map((spec) => spec.path);
  const reads: Subject[] = [];
  for (const template of paths) {
    const path = template.replace(/\{(\w+)\}/g, (_, name: string) => fill[name] ?? name);
    const url = `${service.url}${path}`;
    const status = (await fetch(url, { headers: auth })).status;
    // Reads that need what the bench data does not have (an identity provider) are left out, and said so.
    if (status !== 200) console.error(`reads: GET ${path} answers ${status}; not measured`);
    else {
      const name = `reads: GET ${path}${labelled ? ` (${service.label})` : ''}`;
      reads.push({ name, pid: service.pid, target: async () => ({ url, headers: auth }) });
    }
  }
  return reads;
}

console.log(
  `CPU per request, medians of ${rounds} alternating rounds of ${seconds} s at ${connections} connections (µs):\n`,
);
console.log('| Request | req/s | user | system | user, each round | PostgreSQL |');
console.log('| --- | --- | --- | --- | --- | --- |');
for (const [name, s] of samples) {
  const postgres = median(s.postgres);
  console.log(
    `| ${name} | ${median(s.rps).toFixed(0)} | ${median(s.user).toFixed(0)} | ${median(s.sys).toFixed(0)} | ${s.user.map((u) => u.toFixed(0)).join(', ')} | ${postgres > 0 ? postgres.toFixed(0) : '–'} |`,
  );
}
