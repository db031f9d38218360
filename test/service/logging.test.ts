import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.ts';
import { createTestUser, type TestUser } from '../support/fixtures.ts';
import { startTestService, type TestService } from '../support/service.ts';

// Structured logs: every line written while serving a request names that request, and no credential
// reaches the log, whether it came in a header or went out in a redirect.
const lines: Record<string, unknown>[] = [];
let service: TestService;
let ada: TestUser;

beforeAll(async () => {
  const logger = createLogger(
    { logLevel: 'debug' },
    {
      write: (line: string) => {
        lines.push(JSON.parse(line));
      },
    },
  );
  service = await startTestService({}, { logger });
  ada = await createTestUser(service, 'ada');
});
afterAll(() => service?.close());

describe('logs', () => {
  it('tag every line of a request with its id and never contain the bearer token', async () => {
    const before = lines.length;
    const created = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ada.token}`,
        'content-type': 'application/json',
        'x-request-id': 'trace-42',
      },
      body: JSON.stringify({ handle: 'logged', name: 'Logged', sourceLocale: 'en' }),
    });
    expect(created.status).toBe(201);
    const denied = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      headers: {
        authorization: 'Bearer l10n_not-a-real-token-at-all',
        // A client behind an authenticating proxy sends the proxy's credential too.
        'proxy-authorization': 'Basic cHJveHk6cHJveHktc2VjcmV0',
        'x-request-id': 'trace-43',
      },
    });
    expect(denied.status).toBe(401);

    const during = lines.slice(before);
    const ids = during.map((line) => line.requestId ?? (line.req as { id?: string } | undefined)?.id);
    expect(during.some((line) => line.msg === 'operation' && line.requestId === 'trace-42')).toBe(true);
    expect(ids).toContain('trace-42');
    expect(ids).toContain('trace-43');
    expect(ids.every((id) => id === 'trace-42' || id === 'trace-43')).toBe(true);
    const text = JSON.stringify(during);
    expect(text).not.toContain(ada.token);
    expect(text).not.toContain('l10n_not-a-real-token-at-all');
    expect(text).not.toContain('cHJveHk6cHJveHktc2VjcmV0');
    expect(text).toContain('[redacted]');
  });

  it('redact credentials sent in a query string, keeping the rest of the request line', async () => {
    const before = lines.length;
    const secrets = {
      access_token: 'query-access-token-0123456789',
      code: 'query-code-0123456789',
      refresh_token: 'query-refresh-0123456789',
      client_secret: 'query-client-secret-0123456789',
      code_verifier: 'query-verifier-0123456789',
      id_token_hint: 'query-id-token-hint-0123456789',
    };
    const refused = await fetch(
      `${service.url}/api/v1/accounts/ada/projects?${new URLSearchParams({ ...secrets, limit: '5' })}`,
    );
    expect(refused.status).toBe(401);
    const oauthError = await fetch(
      `${service.url}/oauth/authorize?${new URLSearchParams({ client_id: 'nobody', Code: secrets.code, state: 'kept-state' })}`,
    );
    expect(oauthError.status).toBeGreaterThanOrEqual(400);
    // A return path that carries a secret of its own (an invitation link passed through sign-in).
    const nested = await fetch(
      `${service.url}/signin?${new URLSearchParams({ next: `/invitations/answer?token=${secrets.refresh_token}` })}`,
      { redirect: 'manual' },
    );
    expect(nested.status).toBeLessThan(500);

    const text = JSON.stringify(lines.slice(before));
    for (const value of Object.values(secrets)) expect(text).not.toContain(value);
    expect(text).toContain('access_token=[redacted]');
    expect(text).toContain('Code=[redacted]');
    expect(text).toContain('limit=5');
    expect(text).toContain('kept-state');
    expect(text).toContain('/invitations/answer');
  });

  it('show the query the client sent, not what a door rewrote it to', async () => {
    const before = lines.length;
    // The authorization endpoint drops scopes it does not know and fills in defaults before oidc-provider
    // sees the request (src/oauth/normalize.ts); the log says what the client asked for.
    const answer = await fetch(
      `${service.url}/oauth/authorize?${new URLSearchParams({ client_id: 'nobody', scope: 'openid' })}`,
      { redirect: 'manual' },
    );
    expect(answer.status).toBeGreaterThanOrEqual(300);
    const line = lines
      .slice(before)
      .find(
        (l) =>
          l.msg === 'request completed' &&
          String((l.req as { url?: string }).url).startsWith('/oauth/authorize'),
      );
    expect(line).toBeDefined();
    expect((line!.req as { query?: Record<string, unknown> }).query).toEqual({
      client_id: 'nobody',
      scope: 'openid',
    });
  });

  it('leave out of the request line the headers every answer carries, keeping the ones of this answer', async () => {
    const before = lines.length;
    const denied = await fetch(`${service.url}/api/v1/accounts/ada/projects`, {
      headers: { authorization: 'Bearer l10n_not-a-real-token-either', 'x-request-id': 'trace-44' },
    });
    expect(denied.status).toBe(401);
    // The answer itself carries them.
    expect(denied.headers.get('content-security-policy')).toBeTruthy();
    expect(denied.headers.get('strict-transport-security')).toBeTruthy();
    expect(denied.headers.get('x-request-id')).toBe('trace-44');

    const line = lines
      .slice(before)
      .find((l) => l.msg === 'request completed' && (l.req as { id?: string }).id === 'trace-44');
    const logged = (line?.res as { headers: Record<string, unknown> } | undefined)?.headers;
    expect(logged).toBeDefined();
    expect(Object.keys(logged!)).not.toContain('content-security-policy');
    expect(Object.keys(logged!)).not.toContain('strict-transport-security');
    expect(Object.keys(logged!)).not.toContain('x-request-id');
    // What says something about this answer stays: the challenge of a refused bearer token.
    expect(String(logged!['www-authenticate'])).toContain('invalid_token');
  });
});

describe('the request line', () => {
  // The request line has a logger of its own that redacts only credential headers (src/lib/logger.ts): its
  // shape leaves the service logger's other paths nothing to match. Every request line written above, put
  // through the service's logger again, must come out unchanged; a member added to the line that the
  // service's logger would censor (a `password` or `token` beside the headers) makes it differ.
  it('is redacted as the service logger redacts it', async () => {
    const requestLines = lines.filter((line) => line.msg === 'request completed');
    expect(requestLines.length).toBeGreaterThan(3);
    expect(JSON.stringify(requestLines)).toContain('"authorization":"[redacted]"');
    const again: Record<string, unknown>[] = [];
    const serviceLogger = createLogger(
      { logLevel: 'info' },
      { write: (line: string) => void again.push(JSON.parse(line)) },
    );
    for (const { req, res, responseTime } of requestLines) {
      serviceLogger.info({ req, res, responseTime }, 'request completed');
      const { req: req2, res: res2, responseTime: time2 } = again.at(-1)!;
      expect({ req: req2, res: res2, responseTime: time2 }).toEqual({ req, res, responseTime });
    }
    // The check can see a difference: a line with one more credential member does not come out unchanged.
    const [{ req, res, responseTime }] = requestLines as [Record<string, Record<string, unknown>>];
    serviceLogger.info({ req: { ...req, token: 'secret' }, res, responseTime }, 'request completed');
    expect((again.at(-1)!.req as Record<string, unknown>).token).toBe('[redacted]');
  });
});

describe('an error that quotes a URL', () => {
  // Node's URL parser puts what it could not read in the error's `input`: a connection string, password
  // and all, when one was set wrongly past the settings' check (or read from elsewhere).
  it('is logged without it', () => {
    const written: Record<string, unknown>[] = [];
    const logger = createLogger(
      { logLevel: 'info' },
      { write: (line: string) => void written.push(JSON.parse(line)) },
    );
    let thrown: unknown;
    try {
      new URL('postgresql://postgres:S3cr#tPW@127.0.0.1:5432/db');
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { input?: string }).input).toContain('S3cr');
    logger.fatal({ err: thrown }, 'failed to start');
    expect(JSON.stringify(written)).not.toContain('S3cr');
    expect((written[0]!.err as Record<string, unknown>).input).toBe('[redacted]');
  });
});
