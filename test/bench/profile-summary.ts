// `node test/bench/profile-summary.ts <file.cpuprofile>`: where the service's CPU time went, by package
// (self time, V8 samples), for a profile written by `BENCH_CPU_PROF=<dir> npm run bench`.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  hitCount?: number;
}

const file = process.argv[2];
if (!file) {
  console.error('usage: node test/bench/profile-summary.ts <file.cpuprofile>');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
const hits = new Map<number, number>();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

/** node_modules/<package> (scoped too), the service's own folder, node internals, or V8's own entries. */
function bucket(node: ProfileNode): string {
  const { url, functionName } = node.callFrame;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]!.split('/')[0]}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  return functionName.startsWith('(') ? functionName : `(${functionName || 'native'})`;
}

const totals = new Map<string, number>();
for (const [id, count] of hits) {
  const key = bucket(byNode.get(id)!);
  totals.set(key, (totals.get(key) ?? 0) + count);
}
const all = profile.samples.length;
const idle = totals.get('(idle)') ?? 0;
console.log(`${all} samples, ${((idle / all) * 100).toFixed(1)}% idle; self time of the busy samples:`);
for (const [key, count] of [...totals]
  .filter(([k]) => k !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, 25)) {
  console.log(`  ${((count / (all - idle)) * 100).toFixed(1).padStart(5)}%  ${key}`);
}
