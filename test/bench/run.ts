// `npm run bench`: not a test. Prints requests/s, latency and ratios; the numbers go into issue notes.
import { startBenchService } from './harness.ts';
import { benchRest } from './rest.ts';

const env = await startBenchService();
try {
  await benchRest(env);
} finally {
  await env.close();
}
