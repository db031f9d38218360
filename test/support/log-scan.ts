// Every service a suite starts writes its log at debug level to a file of its own, and when the service
// stops, the file is scanned for credentials before the database is dropped. A credential is anything a
// client could present: an account token (l10n_… with a valid checksum), an OAuth access or refresh token
// or authorization code (any string in the log whose SHA-256 is the key of such a row), a browser-session
// cookie value (a Session row's id), a client secret (decrypted from the client rows), or an
// Authorization, Cookie or credential query parameter that is not "[redacted]". Values deleted before the
// scan (revoked grants) cannot be matched by lookup; the structural checks still catch how they would leak.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { looksLikeAccountToken } from '../../src/authz/account-tokens.ts';
import { createFieldCipher } from '../../src/lib/field-encryption.ts';
import { createLogger, type Logger } from '../../src/lib/logger.ts';

/** Where service logs go: TEST_LOG_DIR keeps them after the run; otherwise a temporary folder, emptied as scans pass. */
const LOG_DIR = process.env.TEST_LOG_DIR ?? join(tmpdir(), 'l10n-test-logs');
const KEEP = Boolean(process.env.TEST_LOG_DIR);

export interface ScannedLog {
  logger: Logger;
  file: string;
  /** Findings (described without the secret itself); the file is removed when there are none. */
  scan(databaseUrl: string, fieldEncryptionKey: Buffer): Promise<string[]>;
  /** For a service that never started (it served nothing): closes and removes the file. */
  discard(): void;
}

let sequence = 0;

export function scannedLogger(): ScannedLog {
  mkdirSync(LOG_DIR, { recursive: true });
  const file = join(LOG_DIR, `service-${process.pid}-${Date.now()}-${sequence++}.log`);
  // Synchronous writes: the file is complete the moment the service has stopped.
  const destination = pino.destination({ dest: file, sync: true });
  let done = false;
  return {
    logger: createLogger({ logLevel: 'debug' }, destination),
    file,
    async scan(databaseUrl, fieldEncryptionKey) {
      // A service stopped, then closed, is scanned once.
      if (done) return [];
      done = true;
      const text = readFileSync(file, 'utf8');
      destination.end();
      const findings = [
        ...structuralFindings(text),
        ...(await storedCredentialFindings(text, databaseUrl, fieldEncryptionKey)),
      ];
      if (findings.length === 0 && !KEEP) rmSync(file, { force: true });
      return findings;
    },
    discard() {
      if (done) return;
      done = true;
      destination.end();
      if (!KEEP) rmSync(file, { force: true });
    },
  };
}

/** Shows enough of a secret to find it in the file, not enough to use it. */
const hint = (secret: string) => `${secret.slice(0, 6)}… (${secret.length} chars)`;

const STRUCTURAL: [string, RegExp][] = [
  ['an Authorization header', /"(?:proxy-)?authorization":"(?!\[redacted\]")/gi],
  ['a Cookie header', /"cookie":"(?!\[redacted\]")/gi],
  ['a Set-Cookie header', /"set-cookie":(?!"\[redacted\]")/gi],
  ['a bearer credential', /Bearer [A-Za-z0-9._~+/-]{8,}/g],
  [
    'a credential query parameter',
    /[?&](?:access_token|refresh_token|id_token|id_token_hint|code|code_verifier|client_secret|client_assertion|assertion|token|password)=(?!\[redacted\]|&|"|\\)/gi,
  ],
];

export function structuralFindings(text: string): string[] {
  const findings: string[] = [];
  for (const [what, pattern] of STRUCTURAL) {
    for (const match of text.matchAll(pattern)) findings.push(`${what} in clear: ${hint(match[0])}`);
  }
  for (const match of text.matchAll(/l10n_[0-9A-Za-z]{38}/g)) {
    if (looksLikeAccountToken(match[0])) findings.push(`an account token: ${hint(match[0])}`);
  }
  return findings;
}

async function storedCredentialFindings(
  text: string,
  databaseUrl: string,
  fieldEncryptionKey: Buffer,
): Promise<string[]> {
  // oidc-provider's opaque values are 43 base64url characters, session ids 21 or more.
  const candidates = [...new Set(text.match(/[A-Za-z0-9_-]{16,}/g) ?? [])];
  if (candidates.length === 0) return [];
  const byHash = new Map(candidates.map((c) => [createHash('sha256').update(c).digest('base64url'), c]));
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const findings: string[] = [];
    const secretRows = await client.query<{ model: string; id: string }>(
      `select model, id from oidc_models
        where (model in ('AccessToken', 'RefreshToken', 'AuthorizationCode') and id = any($1))
           or (model = 'Session' and id = any($2))`,
      [[...byHash.keys()], candidates],
    );
    for (const row of secretRows.rows) {
      const value = row.model === 'Session' ? row.id : byHash.get(row.id)!;
      findings.push(
        `${row.model === 'Session' ? 'a session cookie value' : `an OAuth ${row.model}`}: ${hint(value)}`,
      );
    }
    const accountTokens = await client.query<{ token_prefix: string }>(
      'select token_prefix from account_tokens where token_hash = any($1::bytea[])',
      [candidates.map((c) => createHash('sha256').update(c).digest())],
    );
    for (const row of accountTokens.rows) findings.push(`an account token: ${row.token_prefix}…`);

    const cipher = createFieldCipher(fieldEncryptionKey);
    const clients = await client.query<{ id: string; sealed: string }>(
      `select id, payload->>'client_secret_encrypted' as sealed from oidc_models
        where model = 'Client' and payload ? 'client_secret_encrypted'`,
    );
    for (const row of clients.rows) {
      const secret = cipher.decrypt(Buffer.from(row.sealed, 'base64'), `oidc-client-secret:${row.id}`);
      if (text.includes(secret)) findings.push(`the client secret of ${row.id}: ${hint(secret)}`);
    }
    return findings;
  } finally {
    await client.end();
  }
}
