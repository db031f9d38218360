import type { Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// V8 grows its young generation under start-up's allocation (to 2 x 64 MB here: Node is built without
// pointer compression) and keeps the pages; after a load it keeps the old-space pages of its last full
// collection as well. It would give them back in a memory-reducing collection, which a browser asks for
// when a tab goes idle, but Node never tells V8 that it is idle: an idle service stayed at about 310 MB
// after start and at the high mark of its last load for as long as it ran. So the service asks itself, once
// after start and whenever it has been idle for a while after serving requests: one memory-reducing full
// collection, about 100 ms of one core, took RSS after start from 309 to 175 MB (docs/performance.md).
// Under load V8 grows the young generation again as it needs; nothing is capped.

type Collect = () => void;

let collectOnce: Collect | null | undefined;

/**
 * V8's memory-reducing full collection (the one it runs before giving up on an allocation), or undefined
 * where this Node does not let a process ask for it.
 */
function memoryReducingCollection(): Collect | undefined {
  if (collectOnce === undefined) {
    // The `gc` function exists only with --expose-gc; the flag takes effect for contexts made after it.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as
      | ((options: object) => void)
      | undefined;
    collectOnce = gc ? () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) : null;
  }
  return collectOnce ?? undefined;
}

export interface MemoryReducer {
  /** Checks whether the service has been idle long enough since its last request (called on a timer). */
  tick(): boolean;
  stop(): void;
}

export interface MemoryReducerOptions {
  /** How long no request may have run before the memory is given back. */
  idleMs: number;
  /** For tests: the collection and the clock. */
  collect?: Collect;
  now?: () => number;
  /** No timer of its own: the caller ticks (tests). */
  manual?: boolean;
}

/**
 * Gives V8's unused memory back once the server has been idle for `idleMs` after serving requests, and once
 * at once (start-up's garbage). Undefined where the collection cannot be asked for. Requests in flight (a stream too) hold it off; a quiet server is not collected
 * again until it has served something.
 */
export function startMemoryReducer(server: Server, options: MemoryReducerOptions): MemoryReducer | undefined {
  const collect = options.collect ?? memoryReducingCollection();
  if (!collect) return undefined;
  const now = options.now ?? Date.now;
  let inFlight = 0;
  let lastActivity = now();
  let servedSinceCollection = false;

  const onRequest = (_req: unknown, res: { once(event: 'close', listener: () => void): void }) => {
    inFlight++;
    servedSinceCollection = true;
    res.once('close', () => {
      inFlight--;
      lastActivity = now();
    });
  };
  server.on('request', onRequest);

  const reducer: MemoryReducer = {
    tick() {
      if (!servedSinceCollection || inFlight > 0 || now() - lastActivity < options.idleMs) return false;
      servedSinceCollection = false;
      collect();
      return true;
    },
    stop() {
      clearInterval(timer);
      server.off('request', onRequest);
    },
  };

  collect();
  const timer = options.manual ? undefined : setInterval(() => reducer.tick(), options.idleMs / 2).unref();
  return reducer;
}
