// The log scan every test service runs at close (test/support/log-scan.ts) must be able to fail: it flags
// credentials in clear and lets their redacted forms through.
import { describe, expect, it } from 'vitest';
import { generateAccountToken } from '../../src/authz/account-tokens.ts';
import { structuralFindings } from '../support/log-scan.ts';

describe('log scan', () => {
  it('flags credentials in clear', () => {
    const { token } = generateAccountToken();
    const lines = [
      `{"req":{"headers":{"authorization":"Bearer abcdefghijklmnop"}}}`,
      `{"req":{"headers":{"cookie":"_session=abc"}}}`,
      `{"res":{"headers":{"set-cookie":["_session=abc"]}}}`,
      `{"req":{"url":"/api/v1/user?limit=1&access_token=abcdef"}}`,
      `{"req":{"url":"/settings/callback?code=abcdef&state=s"}}`,
      `{"msg":"made ${token}"}`,
    ];
    for (const line of lines) expect(structuralFindings(line), line).not.toEqual([]);
  });

  it('passes redacted lines and look-alikes', () => {
    const lines = [
      `{"req":{"headers":{"authorization":"[redacted]","cookie":"[redacted]"}}}`,
      `{"res":{"headers":{"set-cookie":"[redacted]","location":"[redacted]"}}}`,
      `{"req":{"url":"/oauth/authorize?code_challenge=abc&code=[redacted]&state=s&access_token=[redacted]"}}`,
      // Wrong checksum: not one of ours.
      `{"msg":"l10n_${'a'.repeat(38)}"}`,
    ];
    for (const line of lines) expect(structuralFindings(line), line).toEqual([]);
  });
});
