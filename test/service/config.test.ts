import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { sharedSecretsEnv, startTestService } from '../support/service.ts';

const dataDir = () => mkdtempSync(join(tmpdir(), 'l10n-config-'));

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig({ DATA_DIR: dataDir(), ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('configuration', () => {
  it('runs a first development start with no settings, generating and keeping secrets', () => {
    const dir = dataDir();
    const first = loadConfig({ DATA_DIR: dir });
    const second = loadConfig({ DATA_DIR: dir });
    expect(first.databaseUrl).toBeUndefined();
    expect(first.seedDemo).toBe(true);
    expect(first.devLogin).toBe(true);
    expect(first.fieldEncryptionKey.length).toBe(32);
    expect(second.cookieKeys).toEqual(first.cookieKeys);
    expect(second.signingJwks).toEqual(first.signingJwks);
  });

  it('refuses PORT=0 without BASE_URL, whose default would name port 0, and a DATA_DIR it cannot use', () => {
    expect(problemsOf({ PORT: '0' })).toEqual([
      expect.stringMatching(/^PORT=0 \(any free port\) needs BASE_URL/),
    ]);
    expect(problemsOf({ PORT: '0', BASE_URL: 'http://127.0.0.1:8080' })).toEqual([]);
    // A path through a file: no folder can be made there.
    const file = join(dataDir(), 'a-file');
    writeFileSync(file, '');
    const found = problemsOf({ DATA_DIR: join(file, 'sub') });
    expect(found).toEqual([
      expect.stringMatching(/^DATA_DIR \(.*a-file\/sub\) cannot hold the development secrets: /),
    ]);
  });

  it('names each bad variable and what is wrong', () => {
    const found = problemsOf({
      PORT: 'eighty',
      BASE_URL: 'ftp://x',
      LOG_LEVEL: 'loud',
      DATABASE_URL: 'mysql://x',
      SEED_DEMO: 'maybe',
    });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PORT must be an integer/),
        expect.stringMatching(/^BASE_URL must be an absolute http\(s\) URL/),
        expect.stringMatching(/^LOG_LEVEL must be one of/),
        expect.stringMatching(/^DATABASE_URL must be a postgres/),
        expect.stringMatching(/^SEED_DEMO must be true or false/),
      ]),
    );
  });

  it('refuses a connection URL the drivers cannot read, without repeating it (it may hold a password)', () => {
    // A password with an unencoded # or / is no URL; with a bad escape, none a driver can decode.
    for (const [name, value] of [
      ['DATABASE_URL', 'postgresql://postgres:S3cr#tPW@127.0.0.1:5432/db'],
      ['DATABASE_URL', 'postgres://app:a/b@db.example.com/l10n'],
      ['DATABASE_URL', 'postgresql://app:%zzpw@db.example.com/l10n'],
      ['REDIS_URL', 'redis://:S3cr#tPW@127.0.0.1:6379'],
    ] as const) {
      const found = problemsOf({ [name]: value });
      expect(found, value).toEqual([expect.stringMatching(new RegExp(`^${name} must be .*percent-encode`))]);
      expect(found.join(), value).not.toContain('S3cr');
      expect(found.join(), value).not.toContain('zzpw');
    }
    // The same passwords percent-encoded are fine.
    expect(
      problemsOf({
        DATABASE_URL: 'postgresql://postgres:S3cr%23tPW@127.0.0.1:5432/db',
        REDIS_URL: 'redis://:S3cr%23tPW@127.0.0.1:6379',
      }),
    ).toEqual([]);
  });

  it('validates the metrics, migration and tracing settings', () => {
    expect(
      problemsOf({
        METRICS_PORT: '70000',
        METRICS_TOKEN: 'short',
        MIGRATE_ON_START: 'later',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
      }),
    ).toEqual([
      expect.stringMatching(/^MIGRATE_ON_START must be true or false/),
      expect.stringMatching(/^METRICS_PORT must be an integer/),
      expect.stringMatching(/^METRICS_TOKEN must be at least 32 characters/),
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/),
    ]);
    expect(problemsOf({ PORT: '4000', METRICS_PORT: '4000' })).toEqual([
      expect.stringMatching(/^METRICS_PORT must differ from PORT/),
    ]);
    const config = loadConfig({ DATA_DIR: dataDir(), METRICS_PORT: '9464', MIGRATE_ON_START: 'false' });
    expect(config.metrics).toEqual({ port: 9464, token: undefined });
    expect(config.migrateOnStart).toBe(false);
  });

  it('reads the performance switches (prepared statements, direct MCP tool calls), on by default', () => {
    const defaults = loadConfig({ DATA_DIR: dataDir() });
    expect(defaults.preparedStatements).toBe(true);
    expect(defaults.mcpDirectToolCalls).toBe(true);
    const off = loadConfig({
      DATA_DIR: dataDir(),
      DATABASE_PREPARED_STATEMENTS: 'false',
      MCP_DIRECT_TOOL_CALLS: 'false',
    });
    expect(off.preparedStatements).toBe(false);
    expect(off.mcpDirectToolCalls).toBe(false);
    expect(problemsOf({ MCP_DIRECT_TOOL_CALLS: 'fast' })).toEqual([
      expect.stringMatching(/^MCP_DIRECT_TOOL_CALLS must be true or false/),
    ]);
  });

  it('sizes the glossary version cache in megabytes, 64 by default and 0 for none', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).glossaryCacheMb).toBe(64);
    expect(loadConfig({ DATA_DIR: dataDir(), GLOSSARY_CACHE_MB: '0' }).glossaryCacheMb).toBe(0);
    expect(loadConfig({ DATA_DIR: dataDir(), GLOSSARY_CACHE_MB: '512' }).glossaryCacheMb).toBe(512);
    for (const bad of ['-1', '1.5', '64MB', '70000']) {
      expect(problemsOf({ GLOSSARY_CACHE_MB: bad })).toEqual([
        expect.stringMatching(/^GLOSSARY_CACHE_MB must be a whole number of megabytes from 0 to 65536/),
      ]);
    }
  });

  it('takes several signing keys for rotation, each with its own kid', () => {
    const [key] = JSON.parse(sharedSecretsEnv.SIGNING_JWKS).keys;
    const jwks = (...kids: (string | undefined)[]) =>
      JSON.stringify({ keys: kids.map((kid) => ({ ...key, kid })) });
    const env = { ...sharedSecretsEnv, DATA_DIR: dataDir() };
    expect(
      loadConfig({ ...env, SIGNING_JWKS: jwks('new', 'old') }).signingJwks.keys.map((k) => k.kid),
    ).toEqual(['new', 'old']);
    for (const bad of [jwks('same', 'same'), jwks('new', undefined)]) {
      expect(problemsOf({ ...env, SIGNING_JWKS: bad })).toEqual([
        expect.stringMatching(/each needs its own "kid"/),
      ]);
    }
    const cookies = loadConfig({ ...env, COOKIE_KEYS: `${'n'.repeat(32)}, ${'o'.repeat(32)}` }).cookieKeys;
    expect(cookies).toEqual(['n'.repeat(32), 'o'.repeat(32)]);
  });

  it('takes P-256, RSA and Ed25519 signing keys, each with its algorithm, and refuses keys that cannot sign', () => {
    const jwk = (type: 'ec' | 'rsa' | 'ed25519' | 'x25519', namedCurve?: string) =>
      (type === 'ec'
        ? generateKeyPairSync('ec', { namedCurve: namedCurve! })
        : type === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: 2048 })
          : type === 'ed25519'
            ? generateKeyPairSync('ed25519')
            : generateKeyPairSync('x25519')
      ).privateKey.export({ format: 'jwk' });
    const env = { ...sharedSecretsEnv, DATA_DIR: dataDir() };
    const set = (...keys: object[]) =>
      JSON.stringify({ keys: keys.map((key, i) => ({ kid: `k${i}`, ...key })) });
    const algs = (...keys: object[]) =>
      loadConfig({ ...env, SIGNING_JWKS: set(...keys) }).signingJwks.keys.map((key) => key.alg);
    expect(algs(jwk('rsa'), jwk('ec', 'P-256'), jwk('ed25519'))).toEqual(['RS256', 'ES256', 'EdDSA']);
    expect(algs({ ...jwk('rsa'), alg: 'PS256' })).toEqual(['PS256']);
    for (const bad of [
      jwk('ec', 'P-384'),
      jwk('ec', 'secp256k1'),
      jwk('x25519'),
      { ...jwk('ec', 'P-256'), alg: 'RS256' },
      { ...jwk('ec', 'P-256'), use: 'enc' },
    ]) {
      expect(problemsOf({ ...env, SIGNING_JWKS: set(jwk('ec', 'P-256'), bad) })).toEqual([
        expect.stringMatching(/^SIGNING_JWKS: keys\[1\] cannot sign tokens/),
      ]);
    }
  });

  it('registers clients when the signing key is RSA or Ed25519, not only P-256', async () => {
    for (const type of ['rsa', 'ed25519'] as const) {
      const { privateKey } =
        type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
      const service = await startTestService({
        SIGNING_JWKS: JSON.stringify({ keys: [{ ...privateKey.export({ format: 'jwk' }), kid: type }] }),
      });
      try {
        const response = await fetch(`${service.url}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            redirect_uris: ['http://127.0.0.1:9/cb'],
            token_endpoint_auth_method: 'none',
          }),
        });
        expect(response.status, `${type}: ${await response.clone().text()}`).toBe(201);
      } finally {
        await service.close();
      }
    }
  });

  it('reads the shutdown and HTTP timeouts, in milliseconds, and refuses bad ones', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      SHUTDOWN_TIMEOUT_MS: '5000',
      HTTP_HEADERS_TIMEOUT_MS: '10000',
      HTTP_REQUEST_TIMEOUT_MS: '30000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000',
      EMBEDDED_POSTGRES_PORT: '5433',
    });
    expect(config.shutdownTimeoutMs).toBe(5000);
    expect(config.http).toEqual({
      headersTimeoutMs: 10000,
      requestTimeoutMs: 30000,
      keepAliveTimeoutMs: 65000,
    });
    expect(config.embeddedPostgresPort).toBe(5433);
    const defaults = loadConfig({ DATA_DIR: dataDir() });
    expect(defaults.shutdownTimeoutMs).toBe(20_000);
    expect(defaults.embeddedPostgresPort).toBe(54329);

    const found = problemsOf({
      SHUTDOWN_TIMEOUT_MS: '20s',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '-1',
      EMBEDDED_POSTGRES_PORT: '70000',
    });
    expect(found.join('\n')).toMatch(/SHUTDOWN_TIMEOUT_MS must be a whole number of milliseconds/);
    expect(found.join('\n')).toMatch(/HTTP_KEEP_ALIVE_TIMEOUT_MS must be/);
    expect(found.join('\n')).toMatch(/EMBEDDED_POSTGRES_PORT must be an integer/);
    expect(problemsOf({ HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '30000' })).toEqual([
      'HTTP_HEADERS_TIMEOUT_MS must not be longer than HTTP_REQUEST_TIMEOUT_MS',
    ]);
  });

  it('reads the OAuth rate limits, defaulting to 5 register, 30 token and 20 failed authentications a minute', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).rateLimits).toEqual({
      registerPerMinute: 5,
      tokenPerMinute: 30,
      failedAuthPerMinute: 20,
    });
    const raised = loadConfig({
      DATA_DIR: dataDir(),
      RATE_LIMIT_REGISTER_PER_MINUTE: '50',
      RATE_LIMIT_TOKEN_PER_MINUTE: '100000',
      RATE_LIMIT_FAILED_AUTH_PER_MINUTE: '7',
    });
    expect(raised.rateLimits).toEqual({
      registerPerMinute: 50,
      tokenPerMinute: 100000,
      failedAuthPerMinute: 7,
    });
    expect(problemsOf({ RATE_LIMIT_TOKEN_PER_MINUTE: '0', RATE_LIMIT_REGISTER_PER_MINUTE: '1.5' })).toEqual([
      expect.stringMatching(/^RATE_LIMIT_REGISTER_PER_MINUTE must be a whole number/),
      expect.stringMatching(/^RATE_LIMIT_TOKEN_PER_MINUTE must be a whole number/),
    ]);
  });

  it('refuses a BASE_URL with a path, since it is the OAuth issuer', () => {
    expect(problemsOf({ BASE_URL: 'https://example.com/app' })).toEqual([
      expect.stringMatching(/bare origin/),
    ]);
  });

  it('refuses to start in production without secrets, database or https origin', () => {
    const found = problemsOf({ NODE_ENV: 'production', BASE_URL: 'http://l10n.example.com' });
    expect(found).toEqual(
      expect.arrayContaining([
        'BASE_URL must use https in production',
        'DATABASE_URL is required in production',
        'COOKIE_KEYS is required in production',
        'SIGNING_JWKS is required in production',
        'FIELD_ENCRYPTION_KEY is required in production',
      ]),
    );
  });

  it('never enables the development sign-in in production', () => {
    const found = problemsOf({
      NODE_ENV: 'production',
      BASE_URL: 'https://l10n.example.com',
      DATABASE_URL: 'postgresql://db/l10n',
      DEV_LOGIN: 'true',
      ...sharedSecretsEnv,
    });
    expect(found).toEqual(['DEV_LOGIN cannot be enabled with NODE_ENV=production']);
  });

  it('checks the shape of provided secrets', () => {
    const found = problemsOf({
      COOKIE_KEYS: 'short',
      SIGNING_JWKS: '{"keys":[]}',
      FIELD_ENCRYPTION_KEY: 'AAAA',
    });
    expect(found).toEqual([
      'COOKIE_KEYS: every key must be at least 32 characters',
      expect.stringMatching(/^SIGNING_JWKS must be a JSON Web Key Set/),
      expect.stringMatching(/^FIELD_ENCRYPTION_KEY must be 32 bytes/),
    ]);
  });

  it('refuses values that only looked right: a key set with no usable key, a garbled proxy list, a word as DNS server', () => {
    const found = problemsOf({
      SIGNING_JWKS: '{"keys":[{"d":"x"}]}',
      TRUST_PROXY: 'garbage',
      DNS_SERVERS: 'cafe',
    });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^SIGNING_JWKS must be a JSON Web Key Set/),
        expect.stringMatching(/^TRUST_PROXY must be .* \(got "garbage"\)$/),
        expect.stringContaining('DNS_SERVERS must list IP addresses'),
      ]),
    );
    expect(problemsOf({ TRUST_PROXY: '10.0.0.0/33' })).toEqual([expect.stringMatching(/^TRUST_PROXY/)]);
    const accepted = loadConfig({
      DATA_DIR: dataDir(),
      TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8, 192.168.1.1',
      DNS_SERVERS: '1.1.1.1, 1.1.1.1:53, [2606:4700::1111]:53, 2606:4700::1111',
    });
    expect(accepted.trustProxy).toBe('loopback, 10.0.0.0/8, fd00::/8, 192.168.1.1');
    expect(accepted.dnsServers).toHaveLength(4);
  });

  it('accepts a complete production configuration', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      BASE_URL: 'https://l10n.example.com/',
      DATABASE_URL: 'postgresql://db/l10n',
      REDIS_URL: 'redis://cache:6379',
      TRUST_PROXY: '1',
      DATA_DIR: dataDir(),
      ...sharedSecretsEnv,
    });
    expect(config.baseUrl).toBe('https://l10n.example.com');
    expect(config.devLogin).toBe(false);
    expect(config.seedDemo).toBe(false);
    expect(config.trustProxy).toBe(1);
    expect(config.host).toBe('0.0.0.0');
  });
});

describe('sign-in provider settings', () => {
  const production = {
    NODE_ENV: 'production',
    BASE_URL: 'https://l10n.example.com',
    DATABASE_URL: 'postgresql://db/l10n',
    ...sharedSecretsEnv,
  };

  it('turns a provider on only with its settings, with defaults for GitHub and Google', () => {
    const config = loadConfig({
      DATA_DIR: dataDir(),
      GITHUB_CLIENT_ID: 'gh-id',
      GITHUB_CLIENT_SECRET: 'gh-secret',
      GOOGLE_CLIENT_ID: 'g-id',
      GOOGLE_CLIENT_SECRET: 'g-secret',
      DNS_SERVERS: '127.0.0.1:5353, 10.0.0.2',
    });
    expect(config.providers.github).toEqual({
      clientId: 'gh-id',
      clientSecret: 'gh-secret',
      url: 'https://github.com',
      apiUrl: 'https://api.github.com',
    });
    expect(config.providers.google).toMatchObject({ issuer: 'https://accounts.google.com' });
    expect(config.providers.oidc).toBeUndefined();
    expect(config.dnsServers).toEqual(['127.0.0.1:5353', '10.0.0.2']);
    expect(loadConfig({ DATA_DIR: dataDir() }).providers).toEqual({});
  });

  it('names incomplete or unsafe provider settings', () => {
    const found = problemsOf({
      GITHUB_CLIENT_ID: 'only-the-id',
      GOOGLE_CLIENT_SECRET: 'only-the-secret',
      OIDC_CLIENT_ID: 'x',
      OIDC_CLIENT_SECRET: 'y',
      GITHUB_URL: 'not a url',
      DNS_SERVERS: 'dns.example.com',
    });
    expect(found).toEqual(
      expect.arrayContaining([
        'GITHUB_CLIENT_SECRET is required when GITHUB_CLIENT_ID is set',
        'GOOGLE_CLIENT_ID is required when GOOGLE_CLIENT_SECRET is set',
        'OIDC_ISSUER is required when OIDC_CLIENT_ID is set',
        expect.stringContaining('GITHUB_URL must be an absolute https URL'),
        expect.stringContaining('DNS_SERVERS must list IP addresses'),
      ]),
    );
    const insecure = problemsOf({
      ...production,
      GOOGLE_CLIENT_ID: 'g',
      GOOGLE_CLIENT_SECRET: 's',
      GOOGLE_ISSUER: 'http://idp.example.com',
    });
    expect(insecure).toEqual(['GOOGLE_ISSUER must use https in production']);
    expect(
      problemsOf({ ...production, DEV_LOGIN: 'true', GITHUB_CLIENT_ID: 'a', GITHUB_CLIENT_SECRET: 'b' }),
    ).toEqual(['DEV_LOGIN cannot be enabled with NODE_ENV=production']);
  });

  it('reads the private networks organization providers may be on, none by default', () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).orgIdpAllowedNetworks).toEqual([]);
    const config = loadConfig({
      ...production,
      ORG_IDP_ALLOWED_NETWORKS: ' 10.20.0.0/16, fd00:1234::/32 ,192.168.7.7,',
    });
    // A lone address is the network of that address.
    expect(config.orgIdpAllowedNetworks).toEqual(['10.20.0.0/16', 'fd00:1234::/32', '192.168.7.7/32']);
    const message = (got: string) =>
      `ORG_IDP_ALLOWED_NETWORKS must list networks such as 10.20.0.0/16 or fd00:1234::/32, comma-separated (got "${got}")`;
    for (const bad of [
      '10.0.0.0/33',
      'intranet.example',
      '10.0.0.0/8/8',
      'fe80::1%eth0',
      '10.0.0.0/x',
      '::/129',
    ]) {
      expect(problemsOf({ ORG_IDP_ALLOWED_NETWORKS: `192.168.0.0/16, ${bad}` }), bad).toEqual([message(bad)]);
    }
  });
});

describe('listening', () => {
  it('fails the start naming HOST when the address cannot be listened on, instead of a TypeError', async () => {
    await expect(startTestService({ HOST: 'not-a-host.invalid' })).rejects.toThrow(
      /cannot listen on HOST not-a-host\.invalid and PORT \d+/,
    );
  });
});
