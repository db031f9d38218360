// A sign-in through an upstream provider is single-use: its attempt row is made when it starts and deleted
// by the first callback, so a replayed callback (same state, same cookie) finds nothing.
import { randomUUID } from 'node:crypto';
import { SignInAttempt } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';

/** Records a new attempt that lasts `ttlSeconds`; returns its id (carried in the pending-sign-in cookie). */
export async function startSignInAttempt(orm: Orm, ttlSeconds: number): Promise<string> {
  const em = orm.em.fork();
  const attempt = em.create(SignInAttempt, {
    id: randomUUID(),
    expiresAt: new Date(Date.now() + ttlSeconds * 1000),
  });
  await em.flush();
  return attempt.id;
}

/** Uses the attempt up: true for the first callback within its lifetime, false for any other. */
export async function finishSignInAttempt(orm: Orm, id: string): Promise<boolean> {
  const deleted = await orm.em.fork().nativeDelete(SignInAttempt, { id, expiresAt: { $gt: new Date() } });
  return deleted === 1;
}
