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
  /**
   * Fetch client ID metadata documents from loopback addresses (a developer's or a test's own server, its
   * self-signed certificate accepted); never in production, where internal addresses are always refused.
   */
  cimdAllowLoopback: boolean;
  /** express `trust proxy` setting, so the client address is the real one behind a load balancer. */
  trustProxy: boolean | number | string;
  /** Check every successful REST response against openapi.yaml (on in tests, so the document cannot drift). */
  validateResponses: boolean;
  /** Folder with the Casbin model.conf and policy.csv. */
  policyDir: string;
  /** Apply pending migrations at start (under an advisory lock); false when operators run `npm run migrate`. */
  migrateOnStart: boolean;
  /**
   * Prometheus metrics: on their own port (`port`, reachable only by the scraper), and/or at /metrics on
   * the main port behind a bearer `token`. Neither set: no /metrics.
   */
  metrics: { port: number | undefined; token: string | undefined };
  /** OpenTelemetry OTLP/HTTP endpoint; unset: no tracing export (the SDK is not even loaded). */
  otlpEndpoint: string | undefined;
  /** Port of the embedded PostgreSQL (used only without databaseUrl). */
  embeddedPostgresPort: number;
  /** How long a shutdown waits for requests in flight before closing their connections. */
  shutdownTimeoutMs: number;
  /** node:http server timeouts: whole request headers, whole request, idle keep-alive connection. */
  http: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number };
  /** Requests per minute on the OAuth endpoints and failed bearer authentications (see oauth/rate-limits.ts). */
  rateLimits: RateLimitSettings;
  /** Sign-in providers for people; each is on when its settings are present. */
  providers: ProvidersConfig;
  /** DNS servers for domain verification (`ip` or `ip:port`); unset: the system's resolvers. */
  dnsServers: string[] | undefined;
}

export interface OidcProviderConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The name on the sign-in button. */
  name: string;
}

export interface ProvidersConfig {
  github?: { clientId: string; clientSecret: string; url: string; apiUrl: string };
  google?: OidcProviderConfig;
  oidc?: OidcProviderConfig;
}

export interface RateLimitSettings {
  /** POST /oauth/register, per client address. */
  registerPerMinute: number;
  /** Each of /oauth/token, /oauth/revoke, /oauth/introspect, per address and client. */
  tokenPerMinute: number;
  /** Failed bearer authentications on the API and MCP, per address. */
  failedAuthPerMinute: number;
}

/**
 * For process entries (`npm start`, `npm run migrate`): the configuration, or the list of what is wrong
 * on stderr and exit code 1.
 */
export function loadOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
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

/**
 * What `npm run migrate` needs: only the database. Kept apart from loadConfig so a migration job needs no
 * secrets of the running service.
 */
export function loadMigrateConfig(env: NodeJS.ProcessEnv = process.env): {
  databaseUrl: string;
  logLevel: LogLevel;
} {
  const databaseUrl = env.DATABASE_URL?.trim();
  const logLevel = (env.LOG_LEVEL?.trim() || 'info') as LogLevel;
  const problems: string[] = [];
  if (!databaseUrl || !/^postgres(ql)?:\/\//.test(databaseUrl))
    problems.push('DATABASE_URL must be set to a postgres:// or postgresql:// URL');
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  if (problems.length > 0) throw new ConfigError(problems);
  return { databaseUrl: databaseUrl!, logLevel };
}

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
  const embeddedPostgresPort = parsePort(
    str('EMBEDDED_POSTGRES_PORT') ?? '54329',
    problems,
    'EMBEDDED_POSTGRES_PORT',
  );
  const millis = (name: string, fallback: number) => parseMillis(name, str(name), fallback, problems);
  const shutdownTimeoutMs = millis('SHUTDOWN_TIMEOUT_MS', 20_000);
  const http = {
    headersTimeoutMs: millis('HTTP_HEADERS_TIMEOUT_MS', 20_000),
    requestTimeoutMs: millis('HTTP_REQUEST_TIMEOUT_MS', 60_000),
    keepAliveTimeoutMs: millis('HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000),
  };
  // node:http refuses a headers timeout longer than the request timeout (0 turns the latter off).
  if (http.requestTimeoutMs > 0 && http.headersTimeoutMs > http.requestTimeoutMs) {
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not be longer than HTTP_REQUEST_TIMEOUT_MS');
  }
  const seedDemo = parseBool('SEED_DEMO', str('SEED_DEMO'), embedded && nodeEnv !== 'test', problems);
  const devLogin = parseBool('DEV_LOGIN', str('DEV_LOGIN'), embedded && !production, problems);
  const cimdAllowLoopback = parseBool(
    'CIMD_ALLOW_LOOPBACK',
    str('CIMD_ALLOW_LOOPBACK'),
    !production,
    problems,
  );
  const validateResponses = parseBool(
    'VALIDATE_RESPONSES',
    str('VALIDATE_RESPONSES'),
    nodeEnv === 'test',
    problems,
  );
  const migrateOnStart = parseBool('MIGRATE_ON_START', str('MIGRATE_ON_START'), true, problems);
  const metricsPortRaw = str('METRICS_PORT');
  const metricsPort =
    metricsPortRaw === undefined ? undefined : parsePort(metricsPortRaw, problems, 'METRICS_PORT');
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === port)
    problems.push('METRICS_PORT must differ from PORT (set METRICS_TOKEN to serve /metrics on PORT)');
  const metricsToken = str('METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 32)
    problems.push('METRICS_TOKEN must be at least 32 characters (openssl rand -hex 32)');
  const otlpEndpoint = str('OTEL_EXPORTER_OTLP_ENDPOINT');
  if (otlpEndpoint !== undefined && !/^https?:\/\/[^/]/.test(otlpEndpoint))
    problems.push('OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL such as http://collector:4318');

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
  // Rotation: the first key signs, every key verifies and is published. Several keys must be told apart
  // by a unique `kid`, or a verifier could not pick the right one.
  const kids = signingJwks.keys.map((k) => k.kid);
  if (
    kids.length > 1 &&
    (kids.some((kid) => typeof kid !== 'string' || kid === '') || new Set(kids).size !== kids.length)
  )
    problems.push('SIGNING_JWKS: with several keys, each needs its own "kid"');

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
  if (cimdAllowLoopback && production) {
    problems.push('CIMD_ALLOW_LOOPBACK cannot be enabled with NODE_ENV=production');
  }

  const providers = parseProviders(str, production, problems);
  const dnsServers = str('DNS_SERVERS')
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const server of dnsServers ?? []) {
    if (!/^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:]+\])(:\d{1,5})?$/i.test(server) && !/^[0-9a-f:]+$/i.test(server))
      problems.push(`DNS_SERVERS must list IP addresses, each optionally with :port (got "${server}")`);
  }

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
    cimdAllowLoopback,
    trustProxy,
    validateResponses,
    policyDir,
    migrateOnStart,
    metrics: { port: metricsPort, token: metricsToken },
    otlpEndpoint,
    providers,
    dnsServers,
    embeddedPostgresPort,
    shutdownTimeoutMs,
    http,
    rateLimits,
  };
}

/**
 * Each provider is on when its client id is set; then its other settings are required, and its URLs must
 * be absolute (https in production).
 */
function parseProviders(
  str: (name: string) => string | undefined,
  production: boolean,
  problems: string[],
): ProvidersConfig {
  const url = (name: string, fallback?: string): string => {
    const raw = str(name) ?? fallback;
    const parsed = raw ? URL.parse(raw) : null;
    if (!parsed || !['https:', 'http:'].includes(parsed.protocol) || parsed.search || parsed.hash) {
      problems.push(`${name} must be an absolute https URL (got "${raw ?? ''}")`);
      return '';
    }
    if (production && parsed.protocol !== 'https:') problems.push(`${name} must use https in production`);
    return raw!.replace(/\/+$/, '');
  };
  const group = (prefix: string): { clientId: string; clientSecret: string } | undefined => {
    const clientId = str(`${prefix}_CLIENT_ID`);
    const clientSecret = str(`${prefix}_CLIENT_SECRET`);
    if (!clientId && !clientSecret) return undefined;
    if (!clientId) problems.push(`${prefix}_CLIENT_ID is required when ${prefix}_CLIENT_SECRET is set`);
    if (!clientSecret) problems.push(`${prefix}_CLIENT_SECRET is required when ${prefix}_CLIENT_ID is set`);
    return { clientId: clientId ?? '', clientSecret: clientSecret ?? '' };
  };
  const providers: ProvidersConfig = {};
  const github = group('GITHUB');
  if (github)
    providers.github = {
      ...github,
      url: url('GITHUB_URL', 'https://github.com'),
      apiUrl: url('GITHUB_API_URL', 'https://api.github.com'),
    };
  const google = group('GOOGLE');
  if (google)
    providers.google = {
      ...google,
      issuer: url('GOOGLE_ISSUER', 'https://accounts.google.com'),
      name: 'Google',
    };
  const oidc = group('OIDC');
  if (oidc) {
    if (!str('OIDC_ISSUER')) problems.push('OIDC_ISSUER is required when OIDC_CLIENT_ID is set');
    providers.oidc = { ...oidc, issuer: url('OIDC_ISSUER'), name: str('OIDC_NAME') ?? 'single sign-on' };
  }
  return providers;
}

/** What the administration command needs: only the database (no secrets, no port). */
export function loadAdminConfig(env: NodeJS.ProcessEnv = process.env): { databaseUrl: string } {
  const databaseUrl = env.DATABASE_URL?.trim();
  if (!databaseUrl) throw new ConfigError(['DATABASE_URL is required: the database to administer']);
  if (!/^postgres(ql)?:\/\//.test(databaseUrl))
    throw new ConfigError(['DATABASE_URL must be a postgres:// or postgresql:// URL']);
  return { databaseUrl };
}

function parsePort(raw: string, problems: string[], name = 'PORT'): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    problems.push(`${name} must be an integer from 0 to 65535 (got "${raw}")`);
    return 0;
  }
  return n;
}

/** A duration in milliseconds: a whole number from 0 to one day. */
function parseMillis(name: string, raw: string | undefined, fallback: number, problems: string[]): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 86_400_000) {
    problems.push(`${name} must be a whole number of milliseconds from 0 to 86400000 (got "${raw}")`);
    return fallback;
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
