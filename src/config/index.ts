// Reads and validates the whole environment once, at start, through the schema in settings.ts. Every
// other module receives a `Config` and never touches process.env, so a bad value fails here with a
// message that names the variable.
import { join, resolve } from 'node:path';
import { loadOrCreateDevSecrets } from './dev-secrets.ts';
import { type LOG_LEVELS, parseEach, type Settings, secretsSchema, settingsSchema } from './settings.ts';

type NodeEnv = 'development' | 'production' | 'test';
export type LogLevel = (typeof LOG_LEVELS)[number];

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
   * Send the statements of every request as named prepared statements (src/db/prepared.ts); off behind a
   * pooler that does not keep them on a connection (PgBouncer before 1.21 in transaction mode).
   */
  preparedStatements: boolean;
  /**
   * Answer plain tools/call requests (2026-07-28 and the 2025 stateless path) without the MCP SDK's
   * per-request server (src/mcp/direct-call.ts); false sends every MCP request through the SDK.
   */
  mcpDirectToolCalls: boolean;
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
  /**
   * How long a verified bearer token may be reused without looking it up again (src/authz/authenticator.ts;
   * a revocation still takes effect on the next request); 0: look it up on every request.
   */
  authCacheSeconds: number;
  /**
   * Give V8's unused memory back after start and once no request has run for this long (src/lib/memory-
   * reducer.ts); 0: never.
   */
  memoryReduceIdleSeconds: number;
  /**
   * Memory (MB) for the JSON text of glossary versions already read (src/api/resources/glossary.ts): a
   * version never changes, so a read of one this instance has served costs no entry statement; 0: none.
   */
  glossaryCacheMb: number;
  /** Requests per minute on the OAuth endpoints and failed bearer authentications (see oauth/rate-limits.ts). */
  rateLimits: RateLimitSettings;
  /** Sign-in providers for people; each is on when its settings are present. */
  providers: ProvidersConfig;
  /** DNS servers for domain verification (`ip` or `ip:port`); unset: the system's resolvers. */
  dnsServers: string[] | undefined;
  /**
   * Networks (`address/prefix`) an organization's identity provider may resolve to besides public addresses:
   * a self-hosted installation whose organizations run their providers on its private network. Empty: only
   * public addresses (and loopback outside production), since any organization admin picks that URL and
   * our server connects to it (src/identity/org-provider-fetch.ts).
   */
  orgIdpAllowedNetworks: string[];
}

export interface OidcProviderConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The name on the sign-in button. */
  name: string;
}

interface ProvidersConfig {
  github?: { clientId: string; clientSecret: string; url: string; apiUrl: string };
  google?: OidcProviderConfig;
  oidc?: OidcProviderConfig;
}

interface RateLimitSettings {
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

/**
 * What `npm run migrate` needs: only the database. Kept apart from loadConfig so a migration job needs no
 * secrets of the running service.
 */
export function loadMigrateConfig(env: NodeJS.ProcessEnv = process.env): {
  databaseUrl: string;
  logLevel: LogLevel;
} {
  const { values, problems } = parseEach(settingsSchema.pick({ DATABASE_URL: true, LOG_LEVEL: true }), env);
  if (!values.DATABASE_URL && problems.length === 0)
    problems.push('DATABASE_URL must be set to a postgres:// or postgresql:// URL');
  if (problems.length > 0) throw new ConfigError(problems);
  return { databaseUrl: values.DATABASE_URL!, logLevel: values.LOG_LEVEL ?? 'info' };
}

/** What the administration command needs: only the database (no secrets, no port). */
export function loadAdminConfig(env: NodeJS.ProcessEnv = process.env): { databaseUrl: string } {
  const { values, problems } = parseEach(settingsSchema.pick({ DATABASE_URL: true }), env);
  if (!values.DATABASE_URL && problems.length === 0)
    problems.push('DATABASE_URL is required: the database to administer');
  if (problems.length > 0) throw new ConfigError(problems);
  return { databaseUrl: values.DATABASE_URL! };
}

/** Reads `env` (process.env by default). Throws ConfigError listing every problem found. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { values: v, problems } = parseEach(settingsSchema, env);
  const nodeEnv: NodeEnv = v.NODE_ENV ?? 'development';
  const production = nodeEnv === 'production';
  const embedded = !v.DATABASE_URL && !env.DATABASE_URL?.trim();

  const port = v.PORT ?? 3000;
  // Any free port suits a listener, but not the addresses made from BASE_URL's default (the OAuth issuer,
  // every link the service hands out): port 0 is no address a client can reach.
  if (port === 0 && v.BASE_URL === undefined && !env.BASE_URL?.trim())
    problems.push(
      'PORT=0 (any free port) needs BASE_URL: its default, http://localhost:$PORT, would name port 0',
    );
  if (v.BASE_URL === undefined && production && !env.BASE_URL?.trim())
    problems.push('BASE_URL is required in production');
  if (v.BASE_URL?.startsWith('http:') && production) problems.push('BASE_URL must use https in production');
  if (production && !env.DATABASE_URL?.trim()) problems.push('DATABASE_URL is required in production');

  const http = {
    headersTimeoutMs: v.HTTP_HEADERS_TIMEOUT_MS ?? 20_000,
    requestTimeoutMs: v.HTTP_REQUEST_TIMEOUT_MS ?? 60_000,
    keepAliveTimeoutMs: v.HTTP_KEEP_ALIVE_TIMEOUT_MS ?? 5_000,
  };
  // node:http refuses a headers timeout longer than the request timeout (0 turns the latter off).
  if (http.requestTimeoutMs > 0 && http.headersTimeoutMs > http.requestTimeoutMs)
    problems.push('HTTP_HEADERS_TIMEOUT_MS must not be longer than HTTP_REQUEST_TIMEOUT_MS');
  if (v.METRICS_PORT !== undefined && v.METRICS_PORT !== 0 && v.METRICS_PORT === port)
    problems.push('METRICS_PORT must differ from PORT (set METRICS_TOKEN to serve /metrics on PORT)');

  const devLogin = v.DEV_LOGIN ?? (embedded && !production);
  const cimdAllowLoopback = v.CIMD_ALLOW_LOOPBACK ?? !production;
  if (devLogin && production) problems.push('DEV_LOGIN cannot be enabled with NODE_ENV=production');
  if (cimdAllowLoopback && production)
    problems.push('CIMD_ALLOW_LOOPBACK cannot be enabled with NODE_ENV=production');

  // Secrets: from the environment; in development generated once and kept in the data folder.
  const dataDir = resolve(v.DATA_DIR ?? '.data');
  const secretNames = Object.keys(secretsSchema.shape) as (keyof typeof secretsSchema.shape)[];
  const missing = secretNames.filter((name) => !env[name]?.trim());
  if (production && missing.length > 0) {
    for (const name of missing) problems.push(`${name} is required in production`);
    throw new ConfigError(problems);
  }
  let dev: ReturnType<typeof loadOrCreateDevSecrets> | undefined;
  try {
    dev = missing.length > 0 ? loadOrCreateDevSecrets(dataDir) : undefined;
  } catch (error) {
    // A folder that cannot be made or written (a path through a file, no permission), or a secrets file
    // that is not ours: a setting to fix, not a stack trace.
    problems.push(
      `DATA_DIR (${dataDir}) cannot hold the development secrets: ${(error as Error).message}; set DATA_DIR to a writable folder, or set ${missing.join(', ')}`,
    );
    throw new ConfigError(problems);
  }
  const secrets = parseEach(secretsSchema, {
    COOKIE_KEYS: env.COOKIE_KEYS?.trim() || dev?.cookieKeys.join(','),
    SIGNING_JWKS: env.SIGNING_JWKS?.trim() || JSON.stringify(dev?.signingJwks),
    FIELD_ENCRYPTION_KEY: env.FIELD_ENCRYPTION_KEY?.trim() || dev?.fieldEncryptionKey,
  });
  problems.push(...secrets.problems);

  const providers = providersOf(v, production, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    nodeEnv,
    port,
    host: v.HOST ?? (production ? '0.0.0.0' : '127.0.0.1'),
    baseUrl: v.BASE_URL ?? `http://localhost:${port}`,
    databaseUrl: v.DATABASE_URL,
    redisUrl: v.REDIS_URL,
    dataDir,
    logLevel: v.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    cookieKeys: secrets.values.COOKIE_KEYS!,
    signingJwks: secrets.values.SIGNING_JWKS!,
    fieldEncryptionKey: secrets.values.FIELD_ENCRYPTION_KEY!,
    seedDemo: v.SEED_DEMO ?? (embedded && nodeEnv !== 'test'),
    devLogin,
    cimdAllowLoopback,
    trustProxy: v.TRUST_PROXY ?? false,
    validateResponses: v.VALIDATE_RESPONSES ?? nodeEnv === 'test',
    policyDir: resolve(v.POLICY_DIR ?? join(import.meta.dirname, '..', '..', 'policies')),
    migrateOnStart: v.MIGRATE_ON_START ?? true,
    preparedStatements: v.DATABASE_PREPARED_STATEMENTS ?? true,
    mcpDirectToolCalls: v.MCP_DIRECT_TOOL_CALLS ?? true,
    metrics: { port: v.METRICS_PORT, token: v.METRICS_TOKEN },
    otlpEndpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT,
    providers,
    dnsServers: v.DNS_SERVERS,
    orgIdpAllowedNetworks: v.ORG_IDP_ALLOWED_NETWORKS ?? [],
    embeddedPostgresPort: v.EMBEDDED_POSTGRES_PORT ?? 54329,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS ?? 20_000,
    http,
    authCacheSeconds: v.AUTH_CACHE_SECONDS ?? 60,
    memoryReduceIdleSeconds: v.MEMORY_REDUCE_IDLE_SECONDS ?? 30,
    glossaryCacheMb: v.GLOSSARY_CACHE_MB ?? 64,
    // Defaults are the service's documented limits; a load test raises them rather than bypassing them.
    rateLimits: {
      registerPerMinute: v.RATE_LIMIT_REGISTER_PER_MINUTE ?? 5,
      tokenPerMinute: v.RATE_LIMIT_TOKEN_PER_MINUTE ?? 30,
      failedAuthPerMinute: v.RATE_LIMIT_FAILED_AUTH_PER_MINUTE ?? 20,
    },
  };
}

/**
 * Each provider is on when its client id or secret is set; then the other is required, and its URLs must
 * use https in production.
 */
function providersOf(v: Partial<Settings>, production: boolean, problems: string[]): ProvidersConfig {
  const https = (name: string, url: string | undefined) => {
    if (production && url?.startsWith('http:')) problems.push(`${name} must use https in production`);
    return url ?? '';
  };
  const client = (prefix: 'GITHUB' | 'GOOGLE' | 'OIDC') => {
    const clientId = v[`${prefix}_CLIENT_ID`];
    const clientSecret = v[`${prefix}_CLIENT_SECRET`];
    if (!clientId && !clientSecret) return undefined;
    if (!clientId) problems.push(`${prefix}_CLIENT_ID is required when ${prefix}_CLIENT_SECRET is set`);
    if (!clientSecret) problems.push(`${prefix}_CLIENT_SECRET is required when ${prefix}_CLIENT_ID is set`);
    return { clientId: clientId ?? '', clientSecret: clientSecret ?? '' };
  };
  const providers: ProvidersConfig = {};
  const github = client('GITHUB');
  if (github)
    providers.github = {
      ...github,
      url: https('GITHUB_URL', v.GITHUB_URL ?? 'https://github.com'),
      apiUrl: https('GITHUB_API_URL', v.GITHUB_API_URL ?? 'https://api.github.com'),
    };
  const google = client('GOOGLE');
  if (google)
    providers.google = {
      ...google,
      issuer: https('GOOGLE_ISSUER', v.GOOGLE_ISSUER ?? 'https://accounts.google.com'),
      name: 'Google',
    };
  const oidc = client('OIDC');
  if (oidc) {
    if (!v.OIDC_ISSUER) problems.push('OIDC_ISSUER is required when OIDC_CLIENT_ID is set');
    providers.oidc = {
      ...oidc,
      issuer: https('OIDC_ISSUER', v.OIDC_ISSUER),
      name: v.OIDC_NAME ?? 'single sign-on',
    };
  }
  return providers;
}
