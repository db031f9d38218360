// Ends the authorization server's own browser session (oidc-provider's cookie), at sign-out and when someone
// else finishes an authorization's sign-in step: who is signed in is decided by the service's browser
// session (src/identity/sessions.ts); this only keeps the two in step.
import type { Request, Response } from 'express';
import type Provider from 'oidc-provider';

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

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
  // Secure on an https issuer, as the cookie was (BASE_URL decides, not this request's scheme behind a proxy).
  const attributes = {
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure: provider.issuer.startsWith('https:'),
  } as const;
  res.clearCookie(name, attributes);
  res.clearCookie(`${name}.sig`, attributes);
}

/**
 * Call before the sign-in step of `interaction` finishes as `accountId`. An oidc-provider session holds one
 * person. When the authorization started in a session of someone else (whose browser session has ended
 * since, or was replaced by another person's sign-in in this browser), oidc-provider answers the resumed
 * authorization with its logout confirmation: a page that posts to /session/end/confirm, which this service
 * does not route (RP-initiated logout is off). Signing in here already said who it is now, so there is
 * nothing to confirm: that session ends as at sign-out, and the interaction lets go of it (as oidc-provider
 * does before its own logout), so the authorization resumes in a new session that holds `accountId`.
 */
export async function endSessionOfSomeoneElse(
  provider: Provider,
  req: Request,
  res: Response,
  interaction: Interaction,
  accountId: string,
): Promise<void> {
  const started = interaction.session;
  if (!started?.accountId || started.accountId === accountId) return;
  await endAuthorizationSession(provider, req, res);
  interaction.session = undefined;
  await interaction.persist();
}
