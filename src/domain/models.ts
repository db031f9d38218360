import type { EntityManager } from '@mikro-orm/postgresql';
import { AccountModel, type IAccountModel } from '../db/entities/index.ts';
import type { FieldCipher } from '../lib/field-encryption.ts';
import { InvalidInput } from './errors.ts';

// Account models: which LLM an account translates with, and the key to call it. The key is a secret we
// must give back to ourselves later, so it is encrypted (not hashed) and bound to its row.

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

function isLoopback(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * A base URL the service may send an API key to: https anywhere, plain http only to this machine (a
 * local model server), and no credentials in the URL, which would be stored and shown in clear.
 */
export function assertModelBaseUrl(value: string, pointer: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidInput('The base URL is not a valid absolute URL.', pointer);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new InvalidInput('The base URL must use https (plain http only for localhost).', pointer);
  }
  if (url.username || url.password) {
    throw new InvalidInput('Put credentials in apiKey, not in the base URL.', pointer);
  }
}

/** The stored form of an API key; the row id is the associated data, so a ciphertext cannot move rows. */
export function sealModelApiKey(
  cipher: FieldCipher,
  modelId: string,
  apiKey: string | null,
): Pick<IAccountModel, 'apiKeyEncrypted' | 'apiKeyLast4'> {
  if (apiKey === null) return { apiKeyEncrypted: null, apiKeyLast4: null };
  // Four characters (code points), as the column's length check counts them: four UTF-16 units could
  // begin with half of a surrogate pair, which PostgreSQL would store as U+FFFD.
  return { apiKeyEncrypted: cipher.encrypt(apiKey, modelId), apiKeyLast4: [...apiKey].slice(-4).join('') };
}

/**
 * Clears the default flag on the account's other models, in the caller's transaction, before one becomes
 * the default. Writes that make a model of the same account the default take their turn (a transaction
 * lock on the account): under READ COMMITTED a clear cannot see a default another transaction is making at
 * the same moment, and the partial unique index `account_models_one_default` then refused the later one
 * with a 409, where each should simply become the default in its turn.
 */
export async function clearOtherDefaults(
  em: EntityManager,
  accountId: string,
  keepId: string,
): Promise<void> {
  await em.execute(DEFAULT_MODEL_LOCK, [accountId], 'run');
  await em.nativeUpdate(
    AccountModel,
    { account: accountId, isDefault: true, id: { $ne: keepId } },
    { isDefault: false },
  );
}

/** Held to the end of the transaction; one lock per account (a hash collision only makes two wait in turn). */
const DEFAULT_MODEL_LOCK = `select pg_advisory_xact_lock(hashtext('localization-service:default-model'), hashtext(?))`;
