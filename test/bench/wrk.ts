// The load generator: wrk (Debian package `wrk`), in its own process so the service's event loop is not
// shared with the client's, driven by a Lua script that sets the method, headers and body and prints the
// result as one JSON line.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Target {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Lua replacing the static request: defines request()/response()/init() itself (the refresh chain). */
  script?: string;
}

export interface WrkResult {
  requests: number;
  requestsPerSecond: number;
  /** Milliseconds. */
  p50: number;
  p99: number;
  non2xx: number;
  socketErrors: number;
}

const dir = mkdtempSync(join(tmpdir(), 'l10n-wrk-'));
let scripts = 0;

const lua = (value: string) => `[==[${value}]==]`;

const REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"socket_errors":%d,"p50":%.3f,"p99":%.3f}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
`;

function scriptFor(target: Target): string {
  if (target.script) return target.script + REPORT;
  const lines = [`wrk.method = ${lua(target.method ?? 'GET')}`];
  for (const [name, value] of Object.entries(target.headers ?? {}))
    lines.push(`wrk.headers[ ${lua(name)} ] = ${lua(value)}`);
  if (target.body !== undefined) lines.push(`wrk.body = ${lua(target.body)}`);
  return `${lines.join('\n')}\n${REPORT}`;
}

/** One run of wrk against `target`; one thread (the machine has two cores and the service needs one). */
export async function wrk(
  target: Target,
  options: { seconds: number; connections: number; args?: string[] },
): Promise<WrkResult> {
  const file = join(dir, `s${scripts++}.lua`);
  writeFileSync(file, scriptFor(target));
  const { stdout } = await run(
    'wrk',
    [
      '-t1',
      `-c${options.connections}`,
      `-d${options.seconds}s`,
      '--timeout',
      '10s',
      '-s',
      file,
      target.url,
      ...(options.args?.length ? ['--', ...options.args] : []),
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const line = stdout.split('\n').find((l) => l.startsWith('WRKJSON '));
  if (!line) throw new Error(`wrk printed no result:\n${stdout}`);
  const r = JSON.parse(line.slice(8)) as {
    requests: number;
    duration_us: number;
    non2xx: number;
    socket_errors: number;
    p50: number;
    p99: number;
  };
  return {
    requests: r.requests,
    requestsPerSecond: r.requests / (r.duration_us / 1e6),
    p50: r.p50,
    p99: r.p99,
    non2xx: r.non2xx,
    socketErrors: r.socket_errors,
  };
}
