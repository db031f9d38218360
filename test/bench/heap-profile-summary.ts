// Sums a sampling heap profile (.heapprofile, as `npm run bench:memory` with MEMORY_HEAP_PROFILE writes it)
// by allocating function and by package: where the sampled bytes were allocated.
//
//   node test/bench/heap-profile-summary.ts /tmp/promoted.heapprofile [rows]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const [file, rowsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node test/bench/heap-profile-summary.ts <file.heapprofile> [rows]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 30);
const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode };

const where = (url: string) => {
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (module) return module;
  if (url.includes('/src/')) return `src/${url.split('/src/')[1]?.split('/')[0]}`;
  return url.startsWith('node:') ? 'node' : url || '(native)';
};

const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
/** The allocating function with the nearest caller of our own code, which is what one can change. */
const byOwnCaller = new Map<string, number>();
let total = 0;
const walk = (node: ProfileNode, ownCaller: string) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const own = url.includes('/src/')
    ? `${functionName || '(anonymous)'} src/${url.split('/src/')[1]}:${lineNumber + 1}`
    : ownCaller;
  if (node.selfSize > 0) {
    total += node.selfSize;
    const name = `${functionName || '(anonymous)'} ${where(url)}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    byPackage.set(where(url), (byPackage.get(where(url)) ?? 0) + node.selfSize);
    byOwnCaller.set(own, (byOwnCaller.get(own) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, own);
};
walk(head, '(no caller in src)');

const print = (title: string, totals: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, bytes] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, rows))
    console.log(
      `${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${(bytes / 1024 / 1024).toFixed(1).padStart(7)} MB  ${name}`,
    );
};
console.log(`sampled: ${(total / 1024 / 1024).toFixed(1)} MB`);
print('By package', byPackage);
print('By allocating function', byFunction);
print('By the nearest function of src/ on the stack', byOwnCaller);
