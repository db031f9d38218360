// A restart between authorization and token exchange loses nothing: the code, the client and the grant
// live in PostgreSQL, and every instance shares the signing and cookie keys.
import { afterAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.ts';
import {
  authorize,
  CookieJar,
  exchangeCode,
  inProcessOAuth,
  registerPublicClient,
  startOAuthService,
  uniqueHandle,
} from './helpers.ts';

const services: TestService[] = [];
afterAll(async () => {
  for (const s of services.reverse()) await s.close();
});

describe('restart', () => {
  it('exchanges a code issued before the restart, and the session survives too', async () => {
    const before = await startOAuthService();
    services.push(before);
    const { client, redirectUri } = await registerPublicClient(before);
    const jar = new CookieJar();
    const handle = uniqueHandle('rst');
    const { code, verifier } = await authorize(before, jar, client, redirectUri, { handle, create: true });
    await before.stop();

    // The same service (same address and issuer) comes back on the same database.
    const after = await startOAuthService(
      { PORT: String(before.port), BASE_URL: before.config.baseUrl },
      { database: before.database },
    );
    services.push(after);
    const tokens = await exchangeCode(after, client, redirectUri, { code, verifier });

    const inProcess = await inProcessOAuth(after);
    try {
      expect((await inProcess.oauth.verifyAccessToken(tokens.access_token))?.credential.kind).toBe('oauth');
    } finally {
      await inProcess.close();
    }

    // The browser session and the remembered consent survive: no sign-in or consent page this time.
    const again = await authorize(after, jar, client, redirectUri, { handle });
    expect(again.code).toBeTruthy();
  });
});
