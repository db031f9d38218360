// Ends the authorization server's own browser session (oidc-provider's cookie), at sign-out: who is signed
// in is decided by the service's browser session (src/identity/sessions.ts); this only keeps the two in step.
import type { Request, Response } from 'express';
import type Provider from 'oidc-provider';

export async function endAuthorizationSession(
  provider: Provider,
  req: Request,
  res: Response,
): Promise<void> {
  const koa = provider.createContext(req, res);
  const session = await provider.Session.get(koa);
  await session.destroy();
  // Drop the (now meaningless) cookie as well, with the attributes oidc-provider set it with.
  const name = provider.cookieName('session');
  res.clearCookie(name, { path: '/', httpOnly: true, sameSite: 'lax' });
  res.clearCookie(`${name}.sig`, { path: '/', httpOnly: true, sameSite: 'lax' });
}
