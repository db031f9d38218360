import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { Account, User } from '../../db/entities/index.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';

async function serializeUser(op: OperationContext): Promise<Schemas.User> {
  const user = await op.em.findOneOrFail(User, { id: op.caller.userId });
  const account = await op.em.findOneOrFail(Account, { user: user.id });
  return {
    id: user.id,
    handle: account.handle,
    displayName: user.displayName,
    email: user.email ?? null,
    createdAt: user.createdAt.toISOString(),
  };
}

export const userHandlers = {
  async getCurrentUser(op) {
    return { status: 200, body: await serializeUser(op) };
  },

  async updateCurrentUser(op) {
    const user = await op.em.findOneOrFail(User, { id: op.caller.userId });
    const changes: { displayName?: string; email?: string | null } = {};
    if (op.body.displayName !== undefined) changes.displayName = op.body.displayName;
    if (op.body.email !== undefined) changes.email = op.body.email?.toLowerCase() ?? null;
    op.em.assign(user, changes);
    op.audit('user.update', 'user', user.id, { fields: Object.keys(changes) });
    await op.em.flush();
    return { status: 200, body: await serializeUser(op) };
  },
} satisfies Partial<Handlers>;
