import { connect, createServer } from 'node:net';

/**
 * A port free on loopback right now, for a process the suite starts and tells its port. Chosen below the
 * range the OS hands out to outgoing connections (Linux: 32768–60999), not by the OS: a port it picked is
 * one of those, and in the second or two before the started process listens, a connection of any test to
 * PostgreSQL or Redis could take it as its own local port (seen: EADDRINUSE on a service's start).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = SLICE.first + (next++ % SLICE.size);
    if (await listens(port)) return port;
  }
  return listenOn(0);
}

/**
 * The ports this process hands out: a slice of 20000–31999 of its own per vitest worker (VITEST_POOL_ID,
 * 1 to the number of workers), taken in turn from a random start. Two workers picking at random from the
 * whole range could pick the same port in the second before either listened (seen: EADDRINUSE on a
 * service's start in CI); in turn, a worker gives a port out again only after the rest of its slice.
 */
const SLICE = (() => {
  const size = 1_000;
  const worker = Math.max(0, Number(process.env.VITEST_POOL_ID ?? 0) - 1) % 12;
  return { first: 20_000 + worker * size, size };
})();
let next = Math.floor(Math.random() * SLICE.size);

/** Whether `port` can be listened on now (it is closed again at once). */
const listens = (port: number) =>
  listenOn(port).then(
    () => true,
    () => false,
  );

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => {
      const address = srv.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(bound));
    });
  });
}

/** Whether something accepts a connection on loopback `port` now: how the suites see a listener gone. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
