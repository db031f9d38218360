// Every environment variable the service reads, as one zod schema: its type, its format, and the message
// that names it when it is wrong. Rules that tie several variables together (production requirements,
// defaults that depend on others) are applied to the parsed values in index.ts.
import { createPrivateKey, type JsonWebKeyInput } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/** A custom issue whose message is the whole line the operator sees. */
const fail = (ctx: z.RefinementCtx, message: string) => {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
};

/** An unset or blank variable is absent; a set one is trimmed, then checked by `schema`. */
function optional<T extends z.ZodType>(schema: T) {
  return z.preprocess(
    (value) => (typeof value === 'string' ? value.trim() || undefined : value),
    schema.optional(),
  );
}

function wholeNumber(name: string, range: { min?: number; max?: number }, what: string) {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = range;
  return z.string().transform((raw, ctx) => {
    const value = Number(raw);
    return /^\d+$/.test(raw) && value >= min && value <= max
      ? value
      : fail(ctx, `${name} must be ${what} (got "${raw}")`);
  });
}

const port = (name: string) => wholeNumber(name, { max: 65_535 }, 'an integer from 0 to 65535');
const millis = (name: string) =>
  wholeNumber(name, { max: 86_400_000 }, 'a whole number of milliseconds from 0 to 86400000');
const perMinute = (name: string) => wholeNumber(name, { min: 1 }, 'a whole number of at least 1');

const bool = (name: string) =>
  z.string().transform((raw, ctx) => {
    const word = raw.toLowerCase();
    if (TRUE.has(word)) return true;
    if (FALSE.has(word)) return false;
    return fail(ctx, `${name} must be true or false (got "${raw}")`);
  });

const matching = (name: string, pattern: RegExp, what: string) =>
  z.string().regex(pattern, { error: `${name} must be ${what}` });

/**
 * The URL of a service we connect to (the database, Redis), read as its driver will read it: a password with
 * a `#`, `/` or `%` that is not percent-encoded makes it no URL, and the error a driver throws then carries
 * the whole URL, password included, into the start-up log. So it is checked here, and the message never
 * repeats the value.
 */
const credentialUrl = (name: string, scheme: RegExp, what: string) =>
  z.string().transform((raw, ctx) => {
    if (!scheme.test(raw)) return fail(ctx, `${name} must be ${what}`);
    const url = URL.parse(raw);
    if (!url || !decodes(url.username) || !decodes(url.password))
      return fail(
        ctx,
        `${name} must be ${what}, and its value is not one (not repeated here: it may hold a password); ` +
          'percent-encode special characters in the user name and password, such as # as %23, / as %2F and % as %25',
      );
    return raw;
  });

function decodes(part: string): boolean {
  try {
    decodeURIComponent(part);
    return true;
  } catch {
    return false;
  }
}

const postgresUrl = credentialUrl(
  'DATABASE_URL',
  /^postgres(ql)?:\/\//,
  'a postgres:// or postgresql:// URL',
);

/** The service's public origin: a bare http(s) origin, since it is the OAuth issuer. */
const baseUrl = z.string().transform((raw, ctx) => {
  const url = URL.parse(raw);
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    return fail(ctx, `BASE_URL must be an absolute http(s) URL (got "${raw}")`);
  if (url.pathname !== '/' || url.search || url.hash)
    return fail(ctx, `BASE_URL must be a bare origin such as https://l10n.example.com (got "${raw}")`);
  return url.origin;
});

/** An upstream provider's URL (https in production is checked with the other production rules). */
const providerUrl = (name: string) =>
  z.string().transform((raw, ctx) => {
    const url = URL.parse(raw);
    if (!url || !['https:', 'http:'].includes(url.protocol) || url.search || url.hash)
      return fail(ctx, `${name} must be an absolute https URL (got "${raw}")`);
    return raw.replace(/\/+$/, '');
  });

/** The items of a comma-separated setting, trimmed, empty ones left out. */
const commaItems = (raw: string) =>
  raw
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

const commaList = (name: string, item: { test(part: string): boolean }, what: string) =>
  z.string().transform((raw, ctx) => {
    const items = commaItems(raw);
    for (const bad of items.filter((part) => !item.test(part))) fail(ctx, `${name} ${what} (got "${bad}")`);
    return items;
  });

/**
 * `address` or `address/prefix` with a prefix its family allows (a lone address: the network of that one
 * address, its prefix spelled out), or undefined when the item is neither.
 */
function parseNetwork(item: string): { address: string; bits: number } | undefined {
  const [address = '', prefix, ...rest] = item.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix)))
    return undefined;
  const maxBits = family === 6 ? 128 : 32;
  const bits = prefix === undefined ? maxBits : Number(prefix);
  return bits <= maxBits ? { address, bits } : undefined;
}

/**
 * Networks as `address/prefix` (a lone address is the network of that one address), comma-separated; the
 * value is each network with its prefix spelled out, for src/lib/address-guard.ts to match against.
 */
const networkList = (name: string) =>
  z.string().transform((raw, ctx) => {
    const networks: string[] = [];
    for (const item of commaItems(raw)) {
      const network = parseNetwork(item);
      // A zone id (fe80::1%eth0) names an interface of this machine, not a network anyone resolves to.
      if (network && !network.address.includes('%')) networks.push(`${network.address}/${network.bits}`);
      else
        fail(
          ctx,
          `${name} must list networks such as 10.20.0.0/16 or fd00:1234::/32, comma-separated (got "${item}")`,
        );
    }
    return networks;
  });

/**
 * A DNS server as the resolver takes it: an IPv4 or IPv6 address, optionally with a port (`1.1.1.1:53`,
 * `[2606:4700::1111]:53`). Node's own isIP judges the address: a pattern of hex digits and colons let
 * `cafe` through, and the resolver then failed on every domain check.
 */
const IP_WITH_PORT = {
  test(part: string): boolean {
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(part);
    if (bracketed) return isIP(bracketed[1]!) === 6 && validPort(bracketed[2]);
    if (isIP(part) !== 0) return true;
    const withPort = /^([\d.]+):(\d{1,5})$/.exec(part);
    return withPort !== null && isIP(withPort[1]!) === 4 && validPort(withPort[2]);
  },
};
function validPort(port: string | undefined): boolean {
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}

/** The names express's `trust proxy` takes for whole ranges, besides addresses and `address/prefix`. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** One item of a `trust proxy` list: a range name, an address, or a subnet (`10.0.0.0/8`, `fd00::/8`). */
function isProxyItem(item: string): boolean {
  return PROXY_RANGE_NAMES.has(item) || parseNetwork(item) !== undefined;
}

/**
 * express's `trust proxy`: a boolean, a hop count, or addresses and subnets as express reads them. The list
 * is checked here: express would otherwise fail on the first request with `invalid IP address`.
 */
const trustProxy = z.string().transform((raw, ctx): boolean | number | string => {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  const bad = raw
    .split(',')
    .map((item) => item.trim())
    .find((item) => !isProxyItem(item));
  if (bad === undefined) return raw;
  return fail(
    ctx,
    `TRUST_PROXY must be true, false, a hop count, or addresses and subnets (or loopback, linklocal, uniquelocal) separated by commas (got "${bad}")`,
  );
});

/**
 * A private key Node itself can read as a JWK (RSA, EC or OKP with its private part), so that a key set
 * oidc-provider would refuse at start stops the configuration instead, naming SIGNING_JWKS.
 */
function isPrivateJwk(key: unknown): boolean {
  if (typeof key !== 'object' || key === null || typeof (key as { d?: unknown }).d !== 'string') return false;
  try {
    createPrivateKey({ key: key as JsonWebKeyInput['key'], format: 'jwk' });
    return true;
  } catch {
    return false;
  }
}

/**
 * The algorithms the authorization server signs with (oidc-provider's defaults), by the kind of key. Any
 * other key (a P-384 or secp256k1 curve, X25519, `use: enc`, an `alg` its key cannot do) is refused: the
 * provider would stop the start over it, or start and then refuse every client registration.
 */
function signingAlgorithmsOf(key: Record<string, unknown>): string[] {
  if (key.use !== undefined && key.use !== 'sig') return [];
  const available =
    key.kty === 'RSA'
      ? ['RS256', 'PS256']
      : key.kty === 'EC' && key.crv === 'P-256'
        ? ['ES256']
        : key.kty === 'OKP' && key.crv === 'Ed25519'
          ? ['EdDSA', 'Ed25519']
          : [];
  if (key.alg === undefined) return available;
  return available.filter((alg) => alg === key.alg);
}

export const settingsSchema = z.object({
  NODE_ENV: optional(
    z.enum(['development', 'production', 'test'], {
      error: (issue) => `NODE_ENV must be one of development, production, test (got "${issue.input}")`,
    }),
  ),
  PORT: optional(port('PORT')),
  HOST: optional(z.string()),
  BASE_URL: optional(baseUrl),
  DATABASE_URL: optional(postgresUrl),
  REDIS_URL: optional(credentialUrl('REDIS_URL', /^rediss?:\/\//, 'a redis:// or rediss:// URL')),
  DATA_DIR: optional(z.string()),
  POLICY_DIR: optional(z.string()),
  LOG_LEVEL: optional(z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` })),
  TRUST_PROXY: optional(trustProxy),
  EMBEDDED_POSTGRES_PORT: optional(port('EMBEDDED_POSTGRES_PORT')),
  SHUTDOWN_TIMEOUT_MS: optional(millis('SHUTDOWN_TIMEOUT_MS')),
  HTTP_HEADERS_TIMEOUT_MS: optional(millis('HTTP_HEADERS_TIMEOUT_MS')),
  HTTP_REQUEST_TIMEOUT_MS: optional(millis('HTTP_REQUEST_TIMEOUT_MS')),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: optional(millis('HTTP_KEEP_ALIVE_TIMEOUT_MS')),
  SEED_DEMO: optional(bool('SEED_DEMO')),
  DEV_LOGIN: optional(bool('DEV_LOGIN')),
  CIMD_ALLOW_LOOPBACK: optional(bool('CIMD_ALLOW_LOOPBACK')),
  VALIDATE_RESPONSES: optional(bool('VALIDATE_RESPONSES')),
  MIGRATE_ON_START: optional(bool('MIGRATE_ON_START')),
  DATABASE_PREPARED_STATEMENTS: optional(bool('DATABASE_PREPARED_STATEMENTS')),
  MCP_DIRECT_TOOL_CALLS: optional(bool('MCP_DIRECT_TOOL_CALLS')),
  METRICS_PORT: optional(port('METRICS_PORT')),
  METRICS_TOKEN: optional(
    z.string().min(32, { error: 'METRICS_TOKEN must be at least 32 characters (openssl rand -hex 32)' }),
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional(
    matching(
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      /^https?:\/\/[^/]/,
      'an http(s) URL such as http://collector:4318',
    ),
  ),
  AUTH_CACHE_SECONDS: optional(
    wholeNumber('AUTH_CACHE_SECONDS', { max: 3600 }, 'a whole number of seconds from 0 to 3600'),
  ),
  MEMORY_REDUCE_IDLE_SECONDS: optional(
    wholeNumber('MEMORY_REDUCE_IDLE_SECONDS', { max: 86400 }, 'a whole number of seconds from 0 to 86400'),
  ),
  GLOSSARY_CACHE_MB: optional(
    wholeNumber('GLOSSARY_CACHE_MB', { max: 65536 }, 'a whole number of megabytes from 0 to 65536'),
  ),
  RATE_LIMIT_REGISTER_PER_MINUTE: optional(perMinute('RATE_LIMIT_REGISTER_PER_MINUTE')),
  RATE_LIMIT_TOKEN_PER_MINUTE: optional(perMinute('RATE_LIMIT_TOKEN_PER_MINUTE')),
  RATE_LIMIT_FAILED_AUTH_PER_MINUTE: optional(perMinute('RATE_LIMIT_FAILED_AUTH_PER_MINUTE')),
  DNS_SERVERS: optional(
    commaList('DNS_SERVERS', IP_WITH_PORT, 'must list IP addresses, each optionally with :port'),
  ),
  ORG_IDP_ALLOWED_NETWORKS: optional(networkList('ORG_IDP_ALLOWED_NETWORKS')),
  GITHUB_CLIENT_ID: optional(z.string()),
  GITHUB_CLIENT_SECRET: optional(z.string()),
  GITHUB_URL: optional(providerUrl('GITHUB_URL')),
  GITHUB_API_URL: optional(providerUrl('GITHUB_API_URL')),
  GOOGLE_CLIENT_ID: optional(z.string()),
  GOOGLE_CLIENT_SECRET: optional(z.string()),
  GOOGLE_ISSUER: optional(providerUrl('GOOGLE_ISSUER')),
  OIDC_CLIENT_ID: optional(z.string()),
  OIDC_CLIENT_SECRET: optional(z.string()),
  OIDC_ISSUER: optional(providerUrl('OIDC_ISSUER')),
  OIDC_NAME: optional(z.string()),
});

/** The secrets: from the environment, or in development from the data folder (see dev-secrets.ts). */
export const secretsSchema = z.object({
  COOKIE_KEYS: z.string().transform((raw, ctx) => {
    const keys = raw
      .split(',')
      .map((key) => key.trim())
      .filter(Boolean);
    return keys.length > 0 && keys.every((key) => key.length >= 32)
      ? keys
      : fail(ctx, 'COOKIE_KEYS: every key must be at least 32 characters');
  }),
  SIGNING_JWKS: z
    .string()
    .transform((raw, ctx) => {
      try {
        const jwks = JSON.parse(raw) as { keys?: unknown };
        if (Array.isArray(jwks.keys) && jwks.keys.length > 0 && jwks.keys.every(isPrivateJwk))
          return { keys: jwks.keys as Record<string, unknown>[] };
      } catch {}
      return fail(
        ctx,
        'SIGNING_JWKS must be a JSON Web Key Set with at least one private key ({"keys":[...]})',
      );
    })
    // Each key names its algorithm: the first one's is the default for clients' ID tokens, which must be one
    // the key set can sign (an RSA or Ed25519 key without `alg` defaulted to ES256, and every dynamic
    // registration was refused).
    .transform(({ keys }, ctx) => {
      const signing: Record<string, unknown>[] = keys.map((key) => ({
        ...key,
        alg: signingAlgorithmsOf(key)[0],
      }));
      const unusable = signing.findIndex((key) => key.alg === undefined);
      if (unusable === -1) return { keys: signing };
      return fail(
        ctx,
        `SIGNING_JWKS: keys[${unusable}] cannot sign tokens; use a P-256 EC key (ES256), an RSA key (RS256, PS256) or an Ed25519 key (EdDSA), with "use" unset or "sig"`,
      );
    })
    // Rotation: the first key signs, every key verifies and is published. Several keys must be told apart
    // by a unique `kid`, or a verifier could not pick the right one.
    .refine(
      ({ keys }) => {
        const kids = keys.map((key) => key.kid);
        return (
          kids.length < 2 ||
          (kids.every((kid) => typeof kid === 'string' && kid !== '') && new Set(kids).size === kids.length)
        );
      },
      { error: 'SIGNING_JWKS: with several keys, each needs its own "kid"' },
    ),
  FIELD_ENCRYPTION_KEY: z
    .string()
    .transform((raw) => Buffer.from(raw, 'base64'))
    .refine((key) => key.length === 32, {
      error: 'FIELD_ENCRYPTION_KEY must be 32 bytes, base64-encoded (openssl rand -base64 32)',
    }),
});

export type Settings = z.output<typeof settingsSchema>;

/**
 * Parses each variable of `schema` on its own, so one bad value does not hide the others: the values that
 * parsed, and one line per problem.
 */
export function parseEach<S extends z.ZodObject>(
  schema: S,
  env: Record<string, string | undefined>,
): { values: Partial<z.output<S>>; problems: string[] } {
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, field] of Object.entries(schema.shape) as [string, z.ZodType][]) {
    const parsed = field.safeParse(env[name]);
    if (parsed.success) values[name] = parsed.data;
    else problems.push(...parsed.error.issues.map((issue) => issue.message));
  }
  return { values: values as Partial<z.output<S>>, problems };
}
