// What some suites need beyond PostgreSQL: Debian's chromium and a Redis server. On a developer machine
// without them those suites are skipped, visibly; in CI (CI=true) they are required and fail instead.
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { type Browser, chromium } from 'playwright-core';

const CHROMIUM_PATH = '/usr/bin/chromium';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const required = Boolean(process.env.CI);

export const hasChromium = required || existsSync(CHROMIUM_PATH);

/** Whether a Redis server answers at REDIS_URL (always "yes" in CI, so a missing one fails there). */
export async function hasRedis(): Promise<boolean> {
  if (required) return true;
  const { hostname, port } = new URL(REDIS_URL);
  return new Promise((resolve) => {
    const socket = connect(Number(port || 6379), hostname);
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** Debian's chromium, headless, with the flags that keep it off the (closed) network. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
