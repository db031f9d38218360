// Preloaded into the service by `npm run bench:memory` (`node --import`): answers the benchmark's IPC
// messages with the process's memory figures, from inside, where the heap can be read. It is not part of
// the service; the service runs exactly as `npm start` runs it.
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

interface ProbeMessage {
  probe: 'usage';
  /** Run a full garbage collection first (needs --expose-gc): then heapUsed is the live heap. */
  gc?: boolean;
  /** Also write a heap snapshot to this file. */
  snapshot?: string;
  /** Also say where the resident memory is: V8's heap spaces and the process's mappings. */
  detail?: boolean;
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/**
 * A sampling heap profile of what outlives the young generation: allocations a scavenge did not free (they
 * were promoted to the old space), whether or not a later full collection frees them. That is what grows
 * the old space under a steady load. With `all`, of every allocation: what fills the young generation and
 * so sets how often a scavenge stops the requests in flight.
 */
interface ProfileMessage {
  probe: 'heap-profile';
  action: 'start' | 'stop';
  /** Where `stop` writes the profile (.heapprofile, for Chrome DevTools or heap-profile-summary). */
  file?: string;
  /** Every allocation, the ones a scavenge frees too: what makes the young generation fill up. */
  all?: boolean;
}

let session: Session | undefined;

process.on('message', async (message: ProbeMessage | ProfileMessage) => {
  if (message?.probe === 'heap-profile') {
    if (message.action === 'start') {
      session = new Session();
      session.connect();
      await session.post('HeapProfiler.startSampling', {
        samplingInterval: 16384,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: message.all === true,
      });
    } else if (session) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      if (message.file) writeFileSync(message.file, JSON.stringify(profile));
      session.disconnect();
      session = undefined;
    }
    process.send?.({ probe: 'heap-profile' });
    return;
  }
  if (message?.probe !== 'usage') return;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (message.gc && gc) gc();
  if (message.snapshot) writeHeapSnapshot(message.snapshot);
  const usage = process.memoryUsage();
  process.send?.({
    probe: 'usage',
    rss: mb(usage.rss),
    heapTotal: mb(usage.heapTotal),
    heapUsed: mb(usage.heapUsed),
    external: mb(usage.external),
    arrayBuffers: mb(usage.arrayBuffers),
    ...(message.detail ? { spaces: heapSpaces(), mappings: residentByMapping() } : {}),
  });
});
// The IPC channel must not keep the service alive when it is told to stop.
process.channel?.unref();

/** Resident MB of each V8 heap space (physical size) with its used part. */
function heapSpaces() {
  return Object.fromEntries(
    getHeapSpaceStatistics().map((space) => [
      space.space_name,
      { physical: mb(space.physical_space_size), used: mb(space.space_used_size) },
    ]),
  );
}

/**
 * Resident MB by kind of mapping (/proc/self/smaps): the node binary and other files, the brk heap (malloc's
 * main arena), and anonymous mappings by size: V8 heap pages are small ones, malloc's thread arenas are
 * 64 MB reservations, stacks are 8 MB.
 */
function residentByMapping() {
  const totals: Record<string, number> = {};
  let current = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      const size = (Number.parseInt(header[2]!, 16) - Number.parseInt(header[1]!, 16)) / 1024 / 1024;
      const name = header[3]!;
      current = name.startsWith('/')
        ? name.endsWith('/node') || name.includes('/bin/node')
          ? 'node binary'
          : 'other files'
        : name === '[heap]'
          ? 'brk heap'
          : name
            ? name
            : size >= 60
              ? 'anon >= 60 MB'
              : size >= 8
                ? 'anon 8-60 MB'
                : 'anon < 8 MB';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) totals[current] = (totals[current] ?? 0) + Number(rss[1]) / 1024;
  }
  return Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, Math.round(v * 10) / 10]));
}
