// Who is signed in on the settings pages: the authorization server's own browser session (the cookie the
// sign-in page set), so one sign-in serves both OAuth clients and our pages.
import type { Request, Response } from 'express';
import type Provider from 'oidc-provider';

/** CSRF purpose of the Sign out form on every settings page (bound to the session id). */
export const SIGNOUT_CSRF_PURPOSE = 'signout';

export interface SignedIn {
  userId: string;
  /** The session's id: what CSRF tokens of the settings forms are bound to. */
  sessionId: string;
}

export async function signedIn(
  provider: Provider,
  req: Request,
  res: Response,
): Promise<SignedIn | undefined> {
  const session = await provider.Session.get(provider.createContext(req, res));
  return session.accountId ? { userId: session.accountId, sessionId: session.jti } : undefined;
}

/** Ends the browser session: every page and every later authorization asks to sign in again. */
export async function endSession(provider: Provider, req: Request, res: Response): Promise<void> {
  const koa = provider.createContext(req, res);
  const session = await provider.Session.get(koa);
  await session.destroy();
  // Drop the (now meaningless) cookie as well, with the attributes oidc-provider set it with.
  const name = provider.cookieName('session');
  res.clearCookie(name, { path: '/', httpOnly: true, sameSite: 'lax' });
  res.clearCookie(`${name}.sig`, { path: '/', httpOnly: true, sameSite: 'lax' });
}
