// The token-endpoint baseline: a bare oidc-provider with its built-in memory adapter (given a larger store,
// below), refresh tokens rotated on every use as ours are. GET /mint?n=… on the second port (not measured)
// hands out fresh refresh tokens, since every round of the refresh benchmark consumes the ones it started
// with. Two public clients with the same metadata: `bench`, a static client of the configuration
// (oidc-provider keeps it as an object), and, with `&client=registered`, `bench-registered`, stored in the
// adapter as dynamic registration stores a client (as all of the service's clients are), which
// oidc-provider reads and recognises on every grant.
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
// @ts-expect-error: oidc-provider's own memory adapter and its LRU, internal modules without type declarations
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
// @ts-expect-error: as above
import LRU from 'oidc-provider/lib/helpers/lru.js';

// The memory adapter keeps an LRU of 1,000 entries per provider, a development default: a round of refreshes
// writes tens of thousands, so the fresh tokens a round starts from (and renews its chains from, see
// refreshChain in setup.ts) would be evicted before they are used. The same adapter, with room for a run.
const store = new LRU({ maxSize: 500_000 });

const CLIENT_ID = 'bench';
const REGISTERED_CLIENT_ID = 'bench-registered';
const clientMetadata = {
  token_endpoint_auth_method: 'none' as const,
  grant_types: ['authorization_code', 'refresh_token'],
  redirect_uris: ['http://127.0.0.1/cb'],
};
const port = Number(process.env.BARE_OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [{ client_id: CLIENT_ID, ...clientMetadata }],
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  rotateRefreshToken: true,
  issueRefreshToken: () => true,
  routes: { token: '/oauth/token' },
  adapter: (model: string) => new MemoryAdapter(model, store),
});
// oidc-provider's models read and write through their `adapter`; the types do not declare it.
const clientStore = (
  provider.Client as unknown as { adapter: { upsert(id: string, payload: object): Promise<void> } }
).adapter;
// An unused registered client could still be evicted from the LRU by a long run of the static client's
// refreshes, so each mint for it stores it again (it stays while its own run uses it).
const registerClient = () =>
  clientStore.upsert(REGISTERED_CLIENT_ID, { client_id: REGISTERED_CLIENT_ID, ...clientMetadata });
provider.listen(port, '127.0.0.1');

const mint = createServer(async (req, res) => {
  const query = new URL(req.url ?? '/', issuer).searchParams;
  const n = Number(query.get('n') ?? '1');
  const registered = query.get('client') === 'registered';
  if (registered) await registerClient();
  const clientId = registered ? REGISTERED_CLIENT_ID : CLIENT_ID;
  const client = (await provider.Client.find(clientId))!;
  const tokens: string[] = [];
  for (let i = 0; i < n; i++) {
    const grant = new provider.Grant({ accountId: 'bench-user', clientId });
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
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ clientId, tokens }));
});
mint.listen(0, '127.0.0.1', () => {
  const address = mint.address();
  console.log(`BARE_OIDC_LISTENING ${typeof address === 'object' && address ? address.port : 0}`);
});
// Exits rather than dies on SIGTERM, so that a CPU profile (`--cpu-prof`, npm run bench:cpu) is written.
process.once('SIGTERM', () => process.exit(0));
