import { spawn } from 'node:child_process';

export interface BurstRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface BurstAnswer {
  status: number;
  body: string;
}

/**
 * Sends every request at once from a child process and returns the answers in the same order. Requests
 * sent from the test's own event loop, which the service in the same process shares, never overlap enough
 * to show a race: a script or another client's burst arrives from outside, as this one does.
 */
export function burstFromAnotherProcess(requests: BurstRequest[]): Promise<BurstAnswer[]> {
  const script = `
    const requests = JSON.parse(process.argv[1]);
    const answers = await Promise.all(requests.map(async ({ url, ...init }) => {
      const response = await fetch(url, { redirect: 'manual', ...init });
      return { status: response.status, body: await response.text() };
    }));
    console.log(JSON.stringify(answers));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(requests)]);
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`burst exited ${code}`)),
    );
  });
}
