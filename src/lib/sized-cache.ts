// A least-recently-used map bounded by the total size of its values rather than their number, for values
// whose sizes differ by a thousand times (a 20-entry glossary and a 5,000-entry one).

export interface SizedCache<V> {
  get(key: string): V | undefined;
  /** Keeps the value unless it alone is bigger than the whole cache; drops the least recently used to fit. */
  set(key: string, value: V): void;
}

/** `maxSize` in the unit `sizeOf` measures; 0 keeps nothing. */
export function createSizedCache<V>(maxSize: number, sizeOf: (value: V) => number): SizedCache<V> {
  // A Map iterates in insertion order; a hit is moved to the end, so the first key is the least recent.
  const entries = new Map<string, { value: V; size: number }>();
  let total = 0;

  const drop = (key: string) => {
    const entry = entries.get(key);
    if (!entry) return;
    entries.delete(key);
    total -= entry.size;
  };

  return {
    get(key) {
      const entry = entries.get(key);
      if (!entry) return undefined;
      entries.delete(key);
      entries.set(key, entry);
      return entry.value;
    },
    set(key, value) {
      drop(key);
      const size = sizeOf(value);
      if (size > maxSize) return;
      while (total + size > maxSize) drop(entries.keys().next().value!);
      entries.set(key, { value, size });
      total += size;
    },
  };
}
