// A Redis server a test owns (so it can kill and restart it): Debian's redis-server as a child process on
// a free loopback port, nothing persisted.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';

const REDIS_SERVER = '/usr/bin/redis-server';
export const hasRedisServer = Boolean(process.env.CI) || existsSync(REDIS_SERVER);

export interface OwnedRedis {
  url: string;
  port: number;
  /** SIGKILL, as a crash would; resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: nothing was persisted). */
  restart(): Promise<void>;
}

export async function startRedisServer(port: number): Promise<OwnedRedis> {
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      REDIS_SERVER,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    await waitForPort(port);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async kill() {
      const running = child;
      if (!running || running.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        running.once('exit', () => resolve());
        running.kill('SIGKILL');
      });
    },
    restart: start,
  };
}

async function waitForPort(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`redis-server did not start on port ${port}`);
}
