import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadCatalogue } from '../../src/api/catalogue.ts';
import {
  generateAccountToken,
  hashToken,
  looksLikeAccountToken,
  TOKEN_PATTERN,
  TOKEN_PREFIX,
} from '../../src/authz/account-tokens.ts';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 32;

function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[Math.floor(Math.random() * 62)];
  return out;
}

describe('account token format', () => {
  it('is the prefix, a base62 secret and a checksum, stored as its SHA-256 with a visible prefix', () => {
    const { token, hash, visiblePrefix } = generateAccountToken();
    expect(token).toMatch(TOKEN_PATTERN);
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(token).toHaveLength(TOKEN_PREFIX.length + SECRET_LENGTH + 6);
    expect(looksLikeAccountToken(token)).toBe(true);
    expect(hash).toEqual(createHash('sha256').update(token).digest());
    expect(hashToken(token)).toEqual(hash);
    expect(visiblePrefix).toBe(token.slice(0, TOKEN_PREFIX.length + 7));
  });

  it('carries at least 160 bits of entropy, drawn from the whole alphabet', () => {
    expect(SECRET_LENGTH * Math.log2(62)).toBeGreaterThanOrEqual(160);
    const tokens = Array.from({ length: 1000 }, () => generateAccountToken().token);
    expect(new Set(tokens).size).toBe(tokens.length);
    const secrets = tokens.map((t) => t.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + SECRET_LENGTH));
    expect(secrets.every((s) => s.length === SECRET_LENGTH && /^[0-9A-Za-z]+$/.test(s))).toBe(true);
    // 32,000 characters: every one of the 62 shows up unless the generator is biased or truncated.
    expect(new Set(secrets.join('')).size).toBe(62);
  });

  it('detects any single changed character through the checksum', () => {
    const { token } = generateAccountToken();
    for (let i = TOKEN_PREFIX.length; i < token.length; i++) {
      for (const replacement of ['0', 'z', 'Q']) {
        if (token[i] === replacement) continue;
        const changed = token.slice(0, i) + replacement + token.slice(i + 1);
        expect(looksLikeAccountToken(changed), `position ${i} -> ${replacement}`).toBe(false);
      }
    }
  });

  it('rejects random strings, even of the right shape', () => {
    for (let i = 0; i < 1000; i++) {
      expect(looksLikeAccountToken(`${TOKEN_PREFIX}${randomBase62(SECRET_LENGTH + 6)}`)).toBe(false);
    }
    const valid = generateAccountToken().token;
    for (const other of [
      '',
      TOKEN_PREFIX,
      valid.slice(0, -1),
      `${valid}A`,
      valid.replace(TOKEN_PREFIX, 'l10x_'),
      `ghp_${valid.slice(TOKEN_PREFIX.length)}`,
      valid.toUpperCase(),
    ]) {
      expect(looksLikeAccountToken(other), other).toBe(false);
    }
  });
});

describe('scope vocabulary in openapi.yaml', () => {
  it('lists exactly the known scopes in the Scope enum that createToken validates against', async () => {
    const schema = (await loadCatalogue()).document.components.schemas.Scope;
    expect([...schema.enum].sort()).toEqual([...ALL_SCOPES].sort());
  });
});
