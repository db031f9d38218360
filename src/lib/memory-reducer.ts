import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// V8 grows its young generation under start-up's allocation (to 2 x 64 MB here: Node is built without
// pointer compression) and keeps the pages; after a load it keeps the old-space pages of its last full
// collection as well. It gives them back in a memory-reducing collection. V8 has its own trigger for one,
// its "memory reducer": some seconds after a full collection, if allocation is low at that moment, it runs
// two. That fires in any pause of a few seconds between bursts of requests, and the next burst starts on a
// small heap and regrows it with extra full collections, which the requests in flight wait for (p99 at 32
// connections 29-36 ms with it, 18-25 ms without; docs/performance.md).
//
// So the service takes that decision itself and runs with V8's trigger off (`--no-memory-reducer`, which
// `npm start` passes; V8 reads it only at start, so it cannot be set from here): one memory-reducing full
// collection right after it starts listening (about 100 ms of one core; RSS after start 309 -> 175 MB), and
// another whenever no request other than a probe has run for MEMORY_REDUCE_IDLE_SECONDS after it served
// some. Under load V8 grows the young generation again as it needs; nothing is capped.

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
  /** Requests that are not traffic (probes, scrapes): they neither count as activity nor hold a collection off. */
  ignore?: (req: IncomingMessage) => boolean;
  /** For tests: the collection and the clock. */
  collect?: Collect;
  now?: () => number;
  /** No timer of its own: the caller ticks (tests). */
  manual?: boolean;
}

/**
 * Gives V8's unused memory back once the server has been idle for `idleMs` after serving requests, and once
 * at once (start-up's garbage). Undefined where the collection cannot be asked for. Requests in flight (a
 * stream too) hold it off, probes (`ignore`) do not; a quiet server is not collected again until it has
 * served something.
 */
export function startMemoryReducer(server: Server, options: MemoryReducerOptions): MemoryReducer | undefined {
  const collect = options.collect ?? memoryReducingCollection();
  if (!collect) return undefined;
  const now = options.now ?? Date.now;
  let inFlight = 0;
  let lastActivity = now();
  let servedSinceCollection = false;

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    if (options.ignore?.(req)) return;
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
