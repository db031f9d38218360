// The processes a benchmark measures: the service itself (`node src/main.mjs`, as production starts it) and
// the baselines, each its own process so no two share an event loop, a heap or a garbage collector.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export interface Child {
  process: ChildProcess;
  /** The line the process printed once it was ready. */
  ready: string;
  /** Resident set size now, in MB (Linux /proc). */
  rssMb(): number;
  stop(): Promise<void>;
}

export async function startChild(
  script: string,
  env: Record<string, string>,
  readyPattern: RegExp,
  nodeArgs: string[] = [],
  /** The checkout the script is in: this one unless a comparison starts another (`npm run bench:cpu`). */
  checkout = root,
): Promise<Child> {
  const child = spawn(process.execPath, [...nodeArgs, join(checkout, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = output.split('\n').find((line) => readyPattern.test(line));
      if (match) resolve(match);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('exit', (code) =>
      reject(new Error(`${script} exited (${code}) before it was ready:\n${output}`)),
    );
  });
  return {
    process: child,
    ready,
    rssMb() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
    },
    stop() {
      if (child.exitCode !== null) return Promise.resolve();
      return new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    },
  };
}
