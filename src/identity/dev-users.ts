// Development users (DEV_LOGIN only, which the configuration refuses in production): find a local user by
// handle, or create one, with no provider involved. The sign-in page (src/web/sign-in/dev-login.ts) and the
// OAuth sign-in step use these.
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { ServiceContext } from '../context.ts';
import { Account } from '../db/entities/index.ts';
import { createUserWithAccount } from '../domain/users.ts';

const HANDLE = /^[a-z][a-z0-9-]{0,37}[a-z0-9]$/;

async function findDevUser(
  ctx: ServiceContext,
  handle: string,
): Promise<{ userId: string } | { error: string }> {
  // Only a well-formed handle can name a user; anything else (a NUL the database would refuse) is not one.
  const account = HANDLE.test(handle)
    ? await ctx.orm.em.fork().findOne(Account, { handle, kind: 'user' })
    : null;
  const userId = account?.user?.id;
  return userId ? { userId } : { error: `No user has the handle “${handle}”.` };
}

async function createDevUser(
  ctx: ServiceContext,
  handle: string,
): Promise<{ userId: string } | { error: string }> {
  if (!HANDLE.test(handle)) {
    return {
      error:
        'A handle is 2 to 39 lowercase letters, digits or hyphens, starts with a letter and does not end with a hyphen.',
    };
  }
  const em = ctx.orm.em.fork();
  try {
    const { user } = createUserWithAccount(em, { handle, displayName: handle });
    await em.flush();
    return { userId: user.id };
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException)
      return { error: `The handle “${handle}” is taken.` };
    // The database refuses reserved words (and anything else the format check misses).
    if ((error as { code?: string }).code === '23514')
      return { error: `The handle “${handle}” is reserved.` };
    throw error;
  }
}

/**
 * The development sign-in of both pages: the user with this handle, or with `create` a new one when there is
 * none. Anyone may sign in as any local user here, so "create" with a handle that exists signs in as it:
 * a form sent twice (a double click) signs in twice rather than saying the handle it just made is taken.
 */
export async function devSignInUser(
  ctx: ServiceContext,
  handle: string,
  create: boolean,
): Promise<{ userId: string } | { error: string }> {
  const found = await findDevUser(ctx, handle);
  return 'error' in found && create ? createDevUser(ctx, handle) : found;
}
