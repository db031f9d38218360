// Bearer token → caller, with verified callers kept in memory for a short while so that a busy client does
// not pay the token lookup (a hash probe joined with its account and grant, or for an OAuth token two reads
// and a decryption) on every request.
//
// A cached caller is never acted on without a check that nothing about any credential changed since it was
// verified. The database keeps a counter, the credential epoch, that moves in the same transaction as any
// revocation or change of a token or grant (triggers in Migration20261125000000_credential_epoch), always to
// a value it never had, even after a restore or failover took it back (Migration20261127000000). Each
// cache entry carries the epoch it was verified at; before a cached caller may act, the request reads the
// current epoch, and the pipeline reads it inside the statement that loads the target account, so in the
// common case the check costs nothing extra. A different epoch means: forget the cache and verify again.
// This holds across any number of instances with no message to deliver or miss, and a revocation is in
// force everywhere from the moment it commits.
import { hash } from 'node:crypto';
import { prepared, type RunPrepared } from '../db/prepared.ts';
import type { BearerVerifier, Caller, Door } from './caller.ts';

/** A subquery giving the current credential epoch, to ride along in a statement a request sends anyway. */
export const CREDENTIAL_EPOCH_SUBQUERY = '(select value::text from credential_epoch)';
const EPOCH = prepared(`select ${CREDENTIAL_EPOCH_SUBQUERY} as value`);

/** How many verified callers one instance keeps at most; the oldest entry goes first. */
const MAX_ENTRIES = 10_000;

/** A caller as found for a request: confirmed (just verified), or from the cache and still to be confirmed. */
export interface FoundCaller {
  caller: Caller;
  /** Set when the caller came from the cache: the credential epoch it was verified at. */
  cachedAtEpoch?: string;
}

export interface Authenticator {
  /**
   * The caller for a bearer, confirmed: either verified now or taken from the cache after checking the
   * credential epoch (one small statement). Null when absent, unknown, revoked or not meant for this door.
   */
  authenticate(bearer: string | undefined, door: Door): Promise<Caller | null>;
  /**
   * The caller for a bearer, possibly from the cache and not yet confirmed: whoever acts on it must first
   * `confirm` it, with the current epoch when a statement it sent anyway brought that along.
   */
  find(bearer: string | undefined, door: Door): Promise<FoundCaller | null>;
  /** A found caller made safe to act on; null when its credential no longer works. */
  confirm(bearer: string, door: Door, found: FoundCaller, currentEpoch?: string): Promise<Caller | null>;
}

export interface AuthenticatorOptions {
  verifiers: BearerVerifier[];
  /** Whether a caller's credential may be used at this door (OAuth audience binding). */
  acceptsAtDoor(caller: Caller, door: Door): boolean;
  /** Runs the epoch read: a statement of its own on every request that no account statement confirms. */
  runPrepared: RunPrepared;
  /** How long a verified caller may be reused; 0 turns the cache off. */
  cacheMs: number;
}

interface Entry {
  caller: Caller;
  epoch: string;
  /** Time (ms) after which the entry is not used: the cache lifetime, or sooner if the credential expires. */
  until: number;
}

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const entries = new Map<string, Entry>();

  const readEpoch = async () => {
    const [row] = await options.runPrepared<{ value: string }>(EPOCH, []);
    return row!.value;
  };

  // The map is keyed by a hash, so no bearer secret sits in the heap longer than its request.
  const keyOf = (bearer: string) => hash('sha256', bearer, 'base64');

  /** Runs the verifiers; caches the result under the epoch read before them (never a newer one). */
  async function verify(bearer: string): Promise<Caller | null> {
    const epoch = options.cacheMs > 0 ? await readEpoch() : undefined;
    for (const verifier of options.verifiers) {
      const caller = await verifier(bearer);
      if (!caller) continue;
      if (epoch !== undefined) remember(bearer, caller, epoch);
      return caller;
    }
    return null;
  }

  function remember(bearer: string, caller: Caller, epoch: string) {
    const until = Math.min(Date.now() + options.cacheMs, caller.validUntil?.getTime() ?? Infinity);
    const key = keyOf(bearer);
    entries.delete(key);
    if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
    entries.set(key, { caller, epoch, until });
  }

  function cached(bearer: string): Entry | undefined {
    const key = keyOf(bearer);
    const entry = entries.get(key);
    if (entry && entry.until <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  }

  const atDoor = (caller: Caller | null, door: Door) =>
    caller && options.acceptsAtDoor(caller, door) ? caller : null;

  async function find(bearer: string | undefined, door: Door): Promise<FoundCaller | null> {
    if (!bearer) return null;
    const entry = cached(bearer);
    if (entry) {
      // A cached caller meant for another door is refused without confirming: it would be refused either way.
      return options.acceptsAtDoor(entry.caller, door)
        ? { caller: entry.caller, cachedAtEpoch: entry.epoch }
        : null;
    }
    const caller = atDoor(await verify(bearer), door);
    return caller ? { caller } : null;
  }

  async function confirm(bearer: string, door: Door, found: FoundCaller, currentEpoch?: string) {
    if (found.cachedAtEpoch === undefined) return found.caller;
    if ((currentEpoch ?? (await readEpoch())) === found.cachedAtEpoch) return found.caller;
    // Some credential changed since this one was verified; every entry is as old or older.
    entries.clear();
    return atDoor(await verify(bearer), door);
  }

  return {
    find,
    confirm,
    async authenticate(bearer, door) {
      const found = await find(bearer, door);
      return found && bearer ? confirm(bearer, door, found) : null;
    },
  };
}
