import { listConnectedApps, revokeConnectedApp } from '../../domain/connected-apps.ts';
import type { Handlers } from '../pipeline.ts';
import { problems } from '../problem.ts';
import { callersAccount } from './user.ts';

// Connected OAuth apps of the caller: the grants oidc-provider holds for them (src/domain/connected-apps.ts).
export const appHandlers = {
  async listConnectedApps(op) {
    const apps = await listConnectedApps(op.service.orm, op.caller.userId);
    return {
      status: 200,
      body: {
        items: apps.map((app) => ({
          clientId: app.clientId,
          clientName: app.clientName,
          scopes: app.scopes,
          firstUsedAt: app.firstUsedAt.toISOString(),
          lastUsedAt: app.lastUsedAt.toISOString(),
          accountTokens: app.accountTokens,
        })),
      },
    };
  },

  async disconnectApp(op) {
    const clientId = op.params.clientId!;
    // In the write's transaction: the revocation and its audit event commit together, or neither does.
    const revoked = await revokeConnectedApp(op.sql, op.caller.userId, clientId);
    if (!revoked) throw problems.notFound(`You have not connected the app "${clientId}".`);
    op.audit('app.disconnect', 'oauth_client', clientId, {}, await callersAccount(op));
    await op.em.flush();
    return { status: 204 };
  },
} satisfies Partial<Handlers>;
