import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { sharedSecretsEnv } from '../support/service.ts';

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
