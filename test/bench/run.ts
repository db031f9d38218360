// `npm run bench`: not a test. Prints requests/s, latency and ratios; the numbers go into issue notes.
// Runs are sequential in one process, so the two sides of each comparison share the same machine state.
import { startBenchService } from './harness.ts';
import { benchMcp } from './mcp.ts';
import { benchRest } from './rest.ts';

const env = await startBenchService();
try {
  await benchRest(env);
  await benchMcp(env);
} finally {
  await env.close();
}
