import { createRequire } from 'node:module';

// Some packages serve only rare paths: CSV import and export and version diffs in the pages, sign-in with an
// upstream provider, claiming a domain, rate-limit counters in Redis. Imported at start, each stays resident
// for the life of the process (its source text, compiled code and module objects) in every instance,
// whether that path is ever taken or not; loaded on first use, only an instance that takes it pays
// (docs/performance.md, Memory). Node's require loads CommonJS and ES modules alike, synchronously, so a
// caller needs no async step; the package's types come from a type-only import, which costs nothing.
const require = createRequire(import.meta.url);

/** Returns the package `specifier`, loading it on the first call. */
export function onFirstUse<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= require(specifier) as T;
    return loaded;
  };
}
