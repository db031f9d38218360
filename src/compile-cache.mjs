// `node src/compile-cache.mjs`: fills Node's compile cache with every module of the service, so that even the
// first start after an install finds each one already stripped of its types and compiled, and never loads
// Node's TypeScript stripper (about 13 MB resident for the life of the process; see src/main.mjs). `npm ci`
// and `npm install` run it (postinstall); a container image runs it again where the cache is to live
// (docs/operations.md). It only imports: nothing starts, nothing is written but the cache.
//
// Plain JavaScript for the same reason as main.mjs. It never fails an install: a module that cannot load
// here (an optional dependency left out, a Node without type stripping) is skipped, and its start will
// fill the cache as before.
import { readdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Scripts that do their work when imported: they are entry points, not modules of the service. */
const ENTRY_SCRIPTS = new Set(['migrate.ts', join('cli', 'admin.ts')]);

// A Node without a compile cache (before 22.1; an install may run under the system's Node) has nothing to fill.
if (typeof nodeModule.enableCompileCache !== 'function') {
  console.log(`compile cache: not filled (Node ${process.versions.node} has none)`);
  process.exit(0);
}
const cache = nodeModule.enableCompileCache();
const skipped = [];
let imported = 0;
for (const file of readdirSync(import.meta.dirname, { recursive: true })) {
  if (!file.endsWith('.ts') || ENTRY_SCRIPTS.has(file)) continue;
  try {
    await import(pathToFileURL(join(import.meta.dirname, file)).href);
    imported++;
  } catch (error) {
    skipped.push(`${file} (${error?.code ?? error?.message ?? error})`);
  }
}
nodeModule.flushCompileCache();
console.log(`compile cache: ${imported} modules in ${cache.directory ?? 'no cache folder'}`);
if (skipped.length > 0) console.log(`compile cache: skipped ${skipped.join(', ')}`);
// A module may have left a handle open (a timer, a pool); the cache is written, so leave now.
process.exit(0);
