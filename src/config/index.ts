// Reads and validates the whole environment once, at start. Every other module receives a `Config`
// and never touches process.env, so a bad value fails here with a message that names the variable.
import { join, resolve } from 'node:path';
import { loadOrCreateDevSecrets } from './dev-secrets.ts';

export type NodeEnv = 'development' | 'production' | 'test';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  nodeEnv: NodeEnv;
  port: number;
  host: string;
  /** Public origin of the service, without a trailing slash; the OAuth issuer. */
  baseUrl: string;
  /** Unset: the service runs an embedded PostgreSQL in `dataDir`. */
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  dataDir: string;
  logLevel: LogLevel;
  /** Keys for signed cookies; the first signs, all verify (rotation). */
  cookieKeys: string[];
  /** Private JWKS (JSON) used by the authorization server to sign. */
  signingJwks: { keys: Record<string, unknown>[] };
  /** 32-byte key for AES-256-GCM field encryption. */
  fieldEncryptionKey: Buffer;
  /** Create the demo data on a first start with an empty database. */
  seedDemo: boolean;
  /** The development sign-in page (pick or create a local user); never in production. */
  devLogin: boolean;
  /** express `trust proxy` setting, so the client address is the real one behind a load balancer. */
  trustProxy: boolean | number | string;
  /** Check every successful REST response against openapi.yaml (on in tests, so the document cannot drift). */
  validateResponses: boolean;
  /** Folder with the Casbin model.conf and policy.csv. */
  policyDir: string;
  /** Requests per minute on the OAuth endpoints and failed bearer authentications (see oauth/rate-limits.ts). */
  rateLimits: RateLimitSettings;
}

export interface RateLimitSettings {
  /** POST /oauth/register, per client address. */
  registerPerMinute: number;
  /** Each of /oauth/token, /oauth/revoke, /oauth/introspect, per address and client. */
  tokenPerMinute: number;
  /** Failed bearer authentications on the API and MCP, per address. */
  failedAuthPerMinute: number;
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads `env` (process.env by default). Throws ConfigError listing every problem found. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };

  const nodeEnvRaw = str('NODE_ENV') ?? 'development';
  if (!['development', 'production', 'test'].includes(nodeEnvRaw)) {
    problems.push(`NODE_ENV must be one of development, production, test (got "${nodeEnvRaw}")`);
  }
  const nodeEnv = nodeEnvRaw as NodeEnv;
  const production = nodeEnv === 'production';

  const port = parsePort(str('PORT') ?? '3000', problems);
  const host = str('HOST') ?? (production ? '0.0.0.0' : '127.0.0.1');

  let baseUrl = `http://localhost:${port}`;
  const baseUrlRaw = str('BASE_URL');
  if (baseUrlRaw) {
    try {
      const u = new URL(baseUrlRaw);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('scheme');
      if (u.pathname !== '/' || u.search || u.hash) {
        problems.push(
          `BASE_URL must be a bare origin such as https://l10n.example.com (got "${baseUrlRaw}")`,
        );
      }
      if (production && u.protocol !== 'https:') problems.push('BASE_URL must use https in production');
      baseUrl = u.origin;
    } catch {
      problems.push(`BASE_URL must be an absolute http(s) URL (got "${baseUrlRaw}")`);
    }
  } else if (production) {
    problems.push('BASE_URL is required in production');
  }

  const databaseUrl = str('DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  if (production && !databaseUrl) problems.push('DATABASE_URL is required in production');

  const redisUrl = str('REDIS_URL');
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl))
    problems.push('REDIS_URL must be a redis:// or rediss:// URL');

  const dataDir = resolve(str('DATA_DIR') ?? '.data');
  const policyDir = resolve(str('POLICY_DIR') ?? join(import.meta.dirname, '..', '..', 'policies'));

  const logLevel = (str('LOG_LEVEL') ?? (nodeEnv === 'test' ? 'silent' : 'info')) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);

  const trustProxy = parseTrustProxy(str('TRUST_PROXY'));

  const embedded = !databaseUrl;
  const seedDemo = parseBool('SEED_DEMO', str('SEED_DEMO'), embedded && nodeEnv !== 'test', problems);
  const devLogin = parseBool('DEV_LOGIN', str('DEV_LOGIN'), embedded && !production, problems);
  const validateResponses = parseBool(
    'VALIDATE_RESPONSES',
    str('VALIDATE_RESPONSES'),
    nodeEnv === 'test',
    problems,
  );
  // Secrets: from the environment; in development generated once and kept in the data folder.
  const secretVars = ['COOKIE_KEYS', 'SIGNING_JWKS', 'FIELD_ENCRYPTION_KEY'] as const;
  const missing = secretVars.filter((name) => !str(name));
  if (production && missing.length > 0) {
    for (const name of missing) problems.push(`${name} is required in production`);
    throw new ConfigError(problems);
  }

  const dev = missing.length > 0 ? loadOrCreateDevSecrets(dataDir) : undefined;
  const cookieKeys = (str('COOKIE_KEYS') ?? dev!.cookieKeys.join(','))
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (cookieKeys.some((k) => k.length < 32))
    problems.push('COOKIE_KEYS: every key must be at least 32 characters');

  let signingJwks: Config['signingJwks'] = { keys: [] };
  try {
    signingJwks = JSON.parse(str('SIGNING_JWKS') ?? JSON.stringify(dev!.signingJwks));
    if (!Array.isArray(signingJwks.keys) || signingJwks.keys.length === 0) throw new Error('no keys');
    if (signingJwks.keys.some((k) => typeof k.d !== 'string')) throw new Error('public key');
  } catch {
    problems.push('SIGNING_JWKS must be a JSON Web Key Set with at least one private key ({"keys":[...]})');
  }

  const fieldKeyRaw = str('FIELD_ENCRYPTION_KEY') ?? dev!.fieldEncryptionKey;
  const fieldEncryptionKey = Buffer.from(fieldKeyRaw, 'base64');
  if (fieldEncryptionKey.length !== 32) {
    problems.push('FIELD_ENCRYPTION_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)');
  }

  // Defaults are the spec's numbers; a load test raises them rather than bypassing the limiters.
  const rateLimits: RateLimitSettings = {
    registerPerMinute: parsePositiveInt(
      'RATE_LIMIT_REGISTER_PER_MINUTE',
      str('RATE_LIMIT_REGISTER_PER_MINUTE'),
      5,
      problems,
    ),
    tokenPerMinute: parsePositiveInt(
      'RATE_LIMIT_TOKEN_PER_MINUTE',
      str('RATE_LIMIT_TOKEN_PER_MINUTE'),
      30,
      problems,
    ),
    failedAuthPerMinute: parsePositiveInt(
      'RATE_LIMIT_FAILED_AUTH_PER_MINUTE',
      str('RATE_LIMIT_FAILED_AUTH_PER_MINUTE'),
      20,
      problems,
    ),
  };

  if (devLogin && production) problems.push('DEV_LOGIN cannot be enabled with NODE_ENV=production');

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv,
    port,
    host,
    baseUrl,
    databaseUrl,
    redisUrl,
    dataDir,
    logLevel,
    cookieKeys,
    signingJwks,
    fieldEncryptionKey,
    seedDemo,
    devLogin,
    trustProxy,
    validateResponses,
    policyDir,
    rateLimits,
  };
}

function parsePort(raw: string, problems: string[]): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    problems.push(`PORT must be an integer from 0 to 65535 (got "${raw}")`);
    return 0;
  }
  return n;
}

function parseBool(name: string, raw: string | undefined, fallback: boolean, problems: string[]): boolean {
  if (raw === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  problems.push(`${name} must be true or false (got "${raw}")`);
  return fallback;
}

function parsePositiveInt(
  name: string,
  raw: string | undefined,
  fallback: number,
  problems: string[],
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < 1) {
    problems.push(`${name} must be a whole number of at least 1 (got "${raw}")`);
    return fallback;
  }
  return n;
}

function parseTrustProxy(raw: string | undefined): Config['trustProxy'] {
  if (raw === undefined) return false;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw; // a list of addresses or subnets, as express accepts it
}
