import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { isoTimestamp } from '../../db/columns.ts';
import { type IAccount, User } from '../../db/entities/index.ts';
import { prepared } from '../../db/prepared.ts';
import { personalAccount } from '../../domain/users.ts';
import type { Handlers, OperationContext } from '../pipeline.ts';
import { problems } from '../problem.ts';

/** The caller as the API shows them, with their personal account's handle: one prepared statement. */
const currentUser = prepared(
  `select u.id, a.handle, u.display_name as "displayName", u.email, ${isoTimestamp('u.created_at')} as "createdAt"
     from users u join accounts a on a.user_id = u.id
    where u.id = ?`,
);

async function serializeUser(op: OperationContext): Promise<Schemas.User> {
  // Through op.sql, so that after an update it reads inside the write's transaction.
  const [user] = await op.sql<Schemas.User[]>(currentUser, [op.caller.userId]);
  if (!user) throw problems.notFound('Your account no longer exists.');
  return user;
}

/**
 * Where a change to the caller's own person is audited (their profile, sign-in methods, connected apps):
 * their personal account, whose audit log they read. Such an operation names no account, and an event
 * without one would be in nobody's log, not even theirs.
 */
export function callersAccount(op: OperationContext): Promise<IAccount> {
  return personalAccount(op.em, op.caller.userId);
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
    op.audit('user.update', 'user', user.id, { fields: Object.keys(changes) }, await callersAccount(op));
    await op.em.flush();
    return { status: 200, body: await serializeUser(op) };
  },
} satisfies Partial<Handlers>;
