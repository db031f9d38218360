// The memory reducer (src/lib/memory-reducer.ts) gives V8's unused memory back after start and when the
// server has been idle after serving requests. Its decisions are checked with a manual clock on a real HTTP
// server; the collection itself is V8's, checked on this process's young generation.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getHeapSpaceStatistics } from 'node:v8';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type MemoryReducer,
  type MemoryReducerOptions,
  startMemoryReducer,
} from '../../src/lib/memory-reducer.ts';

let server: Server | undefined;
let reducer: MemoryReducer | undefined;
afterEach(async () => {
  reducer?.stop();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

/** A server whose requests wait until `release()`; answers 204. */
async function holdingServer() {
  const waiting: (() => Promise<void>)[] = [];
  server = createServer((_req, res) => {
    // Resolves once the response has closed: the reducer's own close listener has run by then.
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    waiting.push(() => {
      res.writeHead(204).end();
      return closed;
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    /** Sends a request; once the server holds it, resolves to the pending answer (wrapped, not awaited). */
    async start(path = '/'): Promise<{ answered: Promise<Response> }> {
      const before = waiting.length;
      const answered = fetch(url + path);
      while (waiting.length === before) await new Promise((resolve) => setImmediate(resolve));
      return { answered };
    },
    /** Answers the oldest held request; resolves once its response has closed. */
    release: () => waiting.shift()!(),
  };
}

/** A reducer on the server with a clock the test moves and a collection it counts; idle after 1 s. */
function manualReducer(options: Pick<MemoryReducerOptions, 'ignore'> = {}) {
  const at = { clock: 0, collections: 0 };
  reducer = startMemoryReducer(server!, {
    idleMs: 1000,
    collect: () => at.collections++,
    now: () => at.clock,
    manual: true,
    ...options,
  })!;
  return at;
}

describe('the memory reducer', () => {
  it('collects once at start, then only after serving requests and an idle period with none in flight', async () => {
    const held = await holdingServer();
    const at = manualReducer();
    expect(at.collections).toBe(1);
    at.clock += 5000;
    expect(reducer!.tick()).toBe(false); // nothing served since

    const { answered } = await held.start();
    at.clock += 5000;
    expect(reducer!.tick()).toBe(false); // a request in flight
    await held.release();
    expect((await answered).status).toBe(204);
    at.clock += 500;
    expect(reducer!.tick()).toBe(false); // idle, but not for long enough
    at.clock += 500;
    expect(reducer!.tick()).toBe(true);
    expect(at.collections).toBe(2);
    at.clock += 5000;
    expect(reducer!.tick()).toBe(false); // nothing served since that collection
  });

  it('leaves probes out: they neither count as traffic nor hold a collection off', async () => {
    const held = await holdingServer();
    const at = manualReducer({ ignore: (req) => req.url === '/healthz' });
    const answer = async (path: string) => {
      const { answered } = await held.start(path);
      await held.release();
      expect((await answered).status).toBe(204);
    };
    await answer('/healthz');
    at.clock += 5000;
    expect(reducer!.tick()).toBe(false); // probes alone: nothing was served since the collection at start

    await answer('/');
    for (let i = 0; i < 3; i++) {
      at.clock += 400;
      await answer('/healthz'); // an orchestrator probing more often than idleMs
    }
    const probe = await held.start('/healthz');
    expect(reducer!.tick()).toBe(true); // 1.2 s since the request, with a probe in flight
    expect(at.collections).toBe(2);
    await held.release();
    expect((await probe.answered).status).toBe(204);
  });

  it("V8's collection gives back the young generation a burst of surviving allocations grew", async () => {
    const newSpace = () =>
      getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;
    // Objects that live across a few scavenges make V8 grow the young generation.
    let kept: object[][] = [];
    for (let round = 0; round < 200; round++) {
      kept.push(Array.from({ length: 20_000 }, (_, i) => ({ i, round })));
      if (kept.length > 20) kept = kept.slice(-10);
    }
    kept = [];
    const grown = newSpace();
    server = createServer();
    reducer = startMemoryReducer(server, { idleMs: 60_000, manual: true });
    expect(reducer, 'this Node lets the process ask for the collection').toBeDefined();
    expect(newSpace()).toBeLessThan(grown);
  });
});
