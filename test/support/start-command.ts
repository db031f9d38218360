// How `npm start` runs the service: package.json's start script, as arguments for this process's own Node.
// The benchmarks and the production-install check start the service exactly so, V8 flags included, so that
// what they measure and check is what an operator runs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The start script's arguments after `node` (its flags, then the entry script), in `checkout`. */
export function startArguments(checkout: string): string[] {
  const { scripts } = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const [node, ...args] = scripts.start.trim().split(/\s+/);
  if (node !== 'node' || args.at(-1) !== 'src/main.mjs')
    throw new Error(`npm start runs "${scripts.start}", not node … src/main.mjs`);
  return args;
}

/** Only its flags for Node (V8's among them), for a caller that names the entry script itself. */
export function startFlags(checkout: string): string[] {
  return startArguments(checkout).slice(0, -1);
}
