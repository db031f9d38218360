// The token-endpoint baseline: a bare oidc-provider with its built-in memory adapter, one public client,
// refresh tokens rotated on every use as ours are. GET /mint?n=… on the second port (not measured) hands out
// fresh refresh tokens, since every round of the refresh benchmark consumes the ones it started with.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const CLIENT_ID = 'bench';
const port = Number(process.env.BARE_OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [
    {
      client_id: CLIENT_ID,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: ['http://127.0.0.1/cb'],
    },
  ],
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  rotateRefreshToken: true,
  issueRefreshToken: () => true,
  routes: { token: '/oauth/token' },
});
provider.listen(port, '127.0.0.1');

const mint = createServer(async (req, res) => {
  const n = Number(new URL(req.url ?? '/', issuer).searchParams.get('n') ?? '1');
  const client = (await provider.Client.find(CLIENT_ID))!;
  const tokens: string[] = [];
  for (let i = 0; i < n; i++) {
    const grant = new provider.Grant({ accountId: 'bench-user', clientId: CLIENT_ID });
    grant.addOIDCScope('offline_access');
    const grantId = await grant.save();
    const token = new provider.RefreshToken({
      client,
      accountId: 'bench-user',
      grantId,
      scope: 'offline_access',
      gty: 'authorization_code',
    });
    tokens.push(await token.save());
  }
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ clientId: CLIENT_ID, tokens }));
});
mint.listen(0, '127.0.0.1', () => {
  const address = mint.address();
  console.log(`BARE_OIDC_LISTENING ${typeof address === 'object' && address ? address.port : 0}`);
});
// Exits rather than dies on SIGTERM, so that a CPU profile (`--cpu-prof`, npm run bench:cpu) is written.
process.once('SIGTERM', () => process.exit(0));
