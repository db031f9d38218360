import { InvalidInput } from './errors.ts';

// Rules that the database enforces too (see the initial migration); checked here first so the user
// gets a precise message with a pointer instead of a constraint name.

export const RESERVED_HANDLES = new Set([
  'api',
  'oauth',
  'mcp',
  'admin',
  'settings',
  'new',
  'login',
  'logout',
  'signin',
  'signup',
  'account',
  'accounts',
  'organizations',
  'orgs',
  'well-known',
  'static',
  'assets',
  'help',
  'docs',
  'www',
  'root',
  'system',
  'healthz',
  'readyz',
  'metrics',
  'me',
  'user',
  'users',
  'apps',
  'tokens',
]);
export const HANDLE_PATTERN = /^[a-z][a-z0-9-]{0,37}[a-z0-9]$/;

/** Throws a 400 problem when `handle` cannot name an account. */
export function assertAccountHandle(handle: string, pointer: string): void {
  if (!HANDLE_PATTERN.test(handle)) {
    throw new InvalidInput(
      'A handle has 2 to 39 lowercase letters, digits or hyphens, starts with a letter and does not end with a hyphen.',
      pointer,
    );
  }
  if (RESERVED_HANDLES.has(handle)) throw new InvalidInput(`The handle "${handle}" is reserved.`, pointer);
}

/** The longest locale the API takes and returns (openapi.yaml's Locale). */
const MAX_LOCALE_LENGTH = 35;

/** The canonical form of a BCP 47 tag (`en-us` -> `en-US`), or a 400 problem naming the bad one. */
export function canonicalLocale(tag: string, pointer: string): string {
  let canonical: string | undefined;
  try {
    [canonical] = Intl.getCanonicalLocales(tag);
  } catch {
    // the problem below
  }
  if (!canonical) throw new InvalidInput(`"${tag}" is not a valid BCP 47 language tag.`, pointer);
  // Canonical forms can be longer than what was sent (`sh` is `sr-Latn`), and what is stored is returned.
  if (canonical.length > MAX_LOCALE_LENGTH)
    throw new InvalidInput(
      `"${tag}" is "${canonical}" in canonical form, ${canonical.length} characters: a locale has at most ${MAX_LOCALE_LENGTH}.`,
      pointer,
    );
  return canonical;
}

export function canonicalLocales(tags: string[], pointer: string): string[] {
  const out = tags.map((tag, i) => canonicalLocale(tag, `${pointer}/${i}`));
  if (new Set(out).size !== out.length) throw new InvalidInput('A locale is listed twice.', pointer);
  return out;
}

/**
 * A record keyed by BCP 47 tags, with its keys in canonical form (`de-ch` -> `de-CH`). A bad key, or two
 * keys naming the same locale, is a 400 pointing at the offending key.
 */
export function canonicalLocaleKeys<V>(record: Record<string, V>, pointer: string): Record<string, V> {
  const out: Record<string, V> = {};
  for (const [key, value] of Object.entries(record)) {
    const at = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    const canonical = canonicalLocale(key, at);
    if (Object.hasOwn(out, canonical)) {
      throw new InvalidInput(`"${key}" names the locale ${canonical} a second time.`, at);
    }
    out[canonical] = value;
  }
  return out;
}
