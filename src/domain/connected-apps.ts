// The OAuth clients a user has authorized ("connected apps"), read from and revoked in the grants that
// oidc-provider stores. Used by the REST API, the /settings/apps page and consent reuse.
import type { Orm } from '../db/orm.ts';

export interface ConnectedApp {
  clientId: string;
  clientName: string | null;
  /** Union of the scopes granted to this client, over every resource and grant. */
  scopes: string[];
  /** When the user first approved the client. */
  firstUsedAt: Date;
  /** When the client last obtained a token (code exchange or refresh), or the approval time. */
  lastUsedAt: Date;
  /** Live account tokens the app created; disconnecting it revokes them too. */
  accountTokens: number;
}

interface GrantRow {
  grant_id: string;
  client_id: string;
  client_name: string | null;
  resources: Record<string, string> | null;
  created_at: Date;
  last_token_at: Date | null;
  account_tokens: number;
}

/** The user's current grant for a client, if any: consent is remembered per user and client. */
export async function findRememberedGrantId(
  orm: Orm,
  userId: string,
  clientId: string,
): Promise<string | undefined> {
  const rows = await orm.em.getConnection().execute<{ id: string }[]>(
    `select id from oidc_models
     where model = 'Grant' and payload->>'accountId' = ? and payload->>'clientId' = ?
       and (expires_at is null or expires_at > now())
     order by created_at desc limit 1`,
    [userId, clientId],
  );
  return rows[0]?.id;
}

export async function listConnectedApps(orm: Orm, userId: string): Promise<ConnectedApp[]> {
  const rows = await orm.em.getConnection().execute<GrantRow[]>(
    `select g.id as grant_id, g.payload->>'clientId' as client_id, c.payload->>'client_name' as client_name,
            g.payload->'resources' as resources, g.created_at,
            (select max(t.created_at) from oidc_models t where t.grant_id = g.id) as last_token_at,
            (select count(*)::int from account_tokens a where a.oauth_grant_id = g.id and a.revoked_at is null
                and (a.expires_at is null or a.expires_at > now())) as account_tokens
     from oidc_models g
     left join oidc_models c on c.model = 'Client' and c.id = g.payload->>'clientId'
     where g.model = 'Grant' and g.payload->>'accountId' = ?
       and (g.expires_at is null or g.expires_at > now())`,
    [userId],
  );
  const apps = new Map<string, ConnectedApp & { scopeSet: Set<string> }>();
  for (const row of rows) {
    const first = new Date(row.created_at);
    const last = row.last_token_at ? new Date(row.last_token_at) : first;
    const app = apps.get(row.client_id) ?? {
      clientId: row.client_id,
      clientName: row.client_name,
      scopes: [],
      scopeSet: new Set<string>(),
      firstUsedAt: first,
      lastUsedAt: last,
      accountTokens: 0,
    };
    app.accountTokens += row.account_tokens;
    for (const scope of Object.values(row.resources ?? {}).flatMap((s) => s.split(' '))) {
      if (scope) app.scopeSet.add(scope);
    }
    if (first < app.firstUsedAt) app.firstUsedAt = first;
    if (last > app.lastUsedAt) app.lastUsedAt = last;
    apps.set(row.client_id, app);
  }
  return [...apps.values()]
    .map(({ scopeSet, ...app }) => ({ ...app, scopes: [...scopeSet].sort() }))
    .sort((a, b) => b.lastUsedAt.getTime() - a.lastUsedAt.getTime());
}

/** Runs one statement: the operation's own (`op.sql`, inside a write's transaction), or a pool's. */
type Statement = <T>(query: string, params: readonly unknown[]) => Promise<T>;

/**
 * Disconnects a client from a user: every grant of that pair, every code, access and refresh token issued
 * under them, and every account token the app created (marked revoked, so its list says so), in one
 * statement (so no token survives half a revocation). Returns false when the user had not connected that
 * client. Run it through the caller's transaction (`op.sql`), so that the revocation and its audit event
 * are one write.
 */
export async function revokeConnectedApp(run: Statement, userId: string, clientId: string): Promise<boolean> {
  const deleted = await run<{ model: string }[]>(
    `with grants as (
       select id from oidc_models
       where model = 'Grant' and payload->>'accountId' = ? and payload->>'clientId' = ?
     ), account_tokens_revoked as (
       update account_tokens set revoked_at = now()
       where oauth_grant_id in (select id from grants) and revoked_at is null
     )
     delete from oidc_models
     where (model = 'Grant' and id in (select id from grants)) or grant_id in (select id from grants)
     returning model`,
    [userId, clientId],
  );
  return deleted.some((row) => row.model === 'Grant');
}
