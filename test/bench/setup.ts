// The benchmark's data: a fresh, migrated database per run with a user, a token and the documents the hot
// requests read, optionally grown by the seed generator; and OAuth refresh tokens to spend. Shared by run.ts
// and statements.ts.
import pg from 'pg';
import { hashToken } from '../../src/authz/account-tokens.ts';
import { ALL_SCOPES } from '../../src/authz/scopes.ts';
import { Project, User } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { createOrganization } from '../../src/domain/organizations.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { authorize, CookieJar, exchangeCode, registerPublicClient } from '../oauth/helpers.ts';
import { type SeedSizes, seedScale } from './seed.ts';
import type { Target } from './wrk.ts';

/** DATABASE_URL, the PostgreSQL server the benchmarks make their databases on; exits without it. */
export function benchServerUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('Set DATABASE_URL to a PostgreSQL server (any database on it); the bench creates its own.');
    process.exit(2);
  }
  return url;
}

/**
 * The page as the service reads it (src/api/account-resources.ts), timestamps formatted by PostgreSQL: a
 * `select *` would leave a bare server parsing and formatting 40 dates a request, which the service does
 * not do, and make the ceiling lower than it is.
 */
export function listStatement(db: BenchDatabase) {
  return {
    text: `select id, handle, name, description, source_locale, target_locales,
             to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
             to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at
           from projects where account_id = $1 order by id limit 21`,
    values: [db.accountId],
  };
}

/**
 * What the pipeline sends for a warm list request (the caller verified moments ago, src/authz/authenticator.ts):
 * the target account with the caller's membership role and the credential epoch, then the page, both as
 * prepared statements as the service sends them (src/db/prepared.ts).
 */
export function pipelineStatements(db: BenchDatabase) {
  return [
    {
      name: 'account',
      text: `select a.*,
               (select m.role from memberships m join organizations o on o.id = m.organization_id
                 where o.account_id = a.id and m.user_id = $1) as caller_membership_role,
               (select value::text from credential_epoch) as credential_epoch
             from accounts a where a.handle = $2`,
      values: [db.userId, 'bench'],
    },
    { name: 'list', ...listStatement(db) },
  ];
}

/** Databases created by this process, for the caller to drop at the end. */
export const databases: string[] = [];

export async function admin(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface BenchDatabase {
  url: string;
  token: string;
  tokenHash: Buffer;
  userId: string;
  accountId: string;
}

/** A migrated database with user `bench` (token, 20 projects, a 200-entry glossary) and an organization
 * `bench-glossary` with a 5,000-entry one; grown to `sizes` when given. */
export async function prepareDatabase(
  serverUrl: string,
  name: string,
  sizes?: SeedSizes,
): Promise<BenchDatabase> {
  const dbName = `bench_${name}_${Date.now()}`;
  await admin(serverUrl, `create database ${dbName}`);
  // The planner costs docs/performance.md recommends (and the embedded PostgreSQL runs with), whatever the
  // server's defaults: with random_page_cost 4 a big organization's first page is read by sorting it whole.
  await admin(serverUrl, `alter database ${dbName} set random_page_cost = 1.1`);
  await admin(serverUrl, `alter database ${dbName} set effective_io_concurrency = 200`);
  databases.push(dbName);
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const orm = await openDatabase(url.toString());
  const em = orm.em.fork();
  const { user, account } = createUserWithAccount(em, { handle: 'bench', displayName: 'Bench' });
  const { secret } = issueAccountToken(em, {
    account,
    createdById: user.id,
    name: 'bench',
    scopes: ALL_SCOPES,
  });
  for (let i = 0; i < 20; i++) {
    em.create(Project, {
      account,
      handle: `p${i}`,
      name: `Project ${i}`,
      sourceLocale: 'en',
      targetLocales: ['de'],
    });
  }
  await em.flush();
  const creator = await em.findOneOrFail(User, { id: user.id });
  const { account: org } = createOrganization(em, creator, {
    handle: 'bench-glossary',
    displayName: 'Glossary',
  });
  await em.flush();
  await orm.close();

  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  for (const [accountId, entries] of [
    [account.id, 200],
    [org.id, 5000],
  ] as const) {
    await client.query(
      `with v as (insert into glossary_versions (id, account_id, version) values (gen_random_uuid(), $1, 1) returning id)
       insert into glossary_entries (id, glossary_version_id, position, term, definition, translations)
       select gen_random_uuid(), v.id, p, 'term ' || p, 'What term ' || p || ' means in this product, in one line.',
              jsonb_build_object('de', 'Begriff ' || p, 'fr', 'terme ' || p)
       from v, generate_series(0, $2 - 1) p`,
      [accountId, entries],
    );
  }
  if (sizes)
    await seedScale(client, sizes, { callerUserId: user.id, log: (m) => console.log(`  seed ${m}`) });
  await client.query('analyze');
  await client.end();
  return {
    url: url.toString(),
    token: secret,
    tokenHash: hashToken(secret),
    userId: user.id,
    accountId: account.id,
  };
}

/**
 * A public client on the service at `url` and a way to mint fresh refresh tokens for it, each from a new
 * user (handles start with `prefix`) signed up through the pages: a refresh token works once, so every
 * measurement of the refresh grant spends new ones.
 */
export async function refreshTokenSource(url: string, prefix: string) {
  const service = { url, config: {} } as never;
  const { client, redirectUri } = await registerPublicClient(service);
  const mint = async (n: number) => {
    const tokens: string[] = [];
    for (let i = 0; i < n; i++) {
      const authorized = await authorize(service, new CookieJar(), client, redirectUri, {
        handle: `${prefix}${Date.now().toString(36)}${i}`,
        create: true,
      });
      const { refresh_token } = await exchangeCode(service, client, redirectUri, authorized);
      if (!refresh_token) throw new Error('no refresh token in the code exchange');
      tokens.push(refresh_token);
    }
    return tokens;
  };
  return { clientId: client.client_id, mint };
}

/**
 * An agent connected over OAuth the way a person connects one (a public client, sign-up, consent, the code
 * exchanged with no resource named, so for the MCP door): its access token and the handle of its user's own
 * account, whose projects the token may list (`project:read`).
 */
export async function oauthAgent(url: string, prefix: string) {
  const service = { url, config: {} } as never;
  const { client, redirectUri } = await registerPublicClient(service);
  const handle = `${prefix}${Date.now().toString(36)}`;
  const authorized = await authorize(service, new CookieJar(), client, redirectUri, { handle, create: true });
  const { access_token } = await exchangeCode(service, client, redirectUri, authorized);
  return { auth: { authorization: `Bearer ${access_token}` }, handle };
}

/** The MCP request both benchmarks measure, as an agent sends it: tools/call list_projects of `account`. */
export function mcpListProjects(
  serviceUrl: string,
  auth: Record<string, string>,
  revision: '2025-06-18' | '2026-07-28' = '2025-06-18',
  account = 'bench',
) {
  const call = { name: 'list_projects', arguments: { account } };
  // At 2026-07-28 there is no initialize: every request carries the `_meta` envelope and the Mcp-Method and
  // Mcp-Name headers, and the answer is plain JSON instead of the legacy one-message event stream.
  const modern = revision === '2026-07-28';
  return {
    url: `${serviceUrl}/mcp`,
    method: 'POST',
    headers: {
      ...auth,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': revision,
      ...(modern ? { 'mcp-method': 'tools/call', 'mcp-name': call.name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: modern
        ? {
            ...call,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': revision,
              'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
              'io.modelcontextprotocol/clientCapabilities': {},
            },
          }
        : call,
    }),
  } satisfies Target;
}

/**
 * The refresh grant as wrk sends it: each connection follows its own chain of rotated refresh tokens (a
 * token works once), starting from `tokens` (one per connection, plus one for the request() call wrk makes
 * before the connections start, which takes a token that is never sent).
 *
 * With `fresh` tokens, every `renewEvery`-th answer's new token is set aside and a fresh one (another grant)
 * takes its place, while they last: with 10 connections and `renewEvery` 10, a grant is refreshed about a
 * hundred times in a row. Without, one grant per connection is refreshed thousands of times a round. Real
 * clients refresh a grant once per access-token lifetime. The length of a chain is nothing to the service
 * (its refresh rate was the same in rounds of 3 and 15 s), but oidc-provider's memory adapter indexes every
 * token a grant ever had and walks that index on each save, so bare oidc-provider slowed down as its chains
 * grew (2,875 req/s in rounds of 3 s, 1,920 in rounds of 15 s): the ceiling measured was its own index.
 */
export function refreshChain(
  url: string,
  clientId: string,
  tokens: string[],
  fresh: { tokens: string[]; renewEvery: number } = { tokens: [], renewEvery: 0 },
): Target {
  const list = (values: string[]) => values.map((t) => `"${t}"`).join(', ');
  return {
    url,
    script: `
local initial = { ${list(tokens)} }
local fresh = { ${list(fresh.tokens)} }
local tokens = {}
local answered = 0
init = function(args)
  for _, t in ipairs(initial) do table.insert(tokens, t) end
end
request = function()
  local t = table.remove(tokens, 1) or "exhausted"
  return wrk.format("POST", nil, { ["content-type"] = "application/x-www-form-urlencoded" },
    "grant_type=refresh_token&client_id=${encodeURIComponent(clientId)}&refresh_token=" .. t)
end
response = function(status, headers, body)
  local t = body:match('"refresh_token":"([^"]+)"')
  if t then
    answered = answered + 1
    if ${fresh.renewEvery} > 0 and answered % ${fresh.renewEvery} == 0 and #fresh > 0 then
      t = table.remove(fresh)
    end
    table.insert(tokens, t)
  end
end
`,
  };
}
