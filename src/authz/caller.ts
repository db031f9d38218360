// Who is calling, as every operation sees it, whichever door (REST, MCP or the web pages) and credential it came through.
import type { Scope } from './scopes.ts';

type Credential =
  /** A bearer token created through the API for one account (see account-tokens.ts). */
  | { kind: 'account_token'; tokenId: string; accountId: string }
  /** An OAuth access token issued by our authorization server (see src/oauth). */
  | { kind: 'oauth'; clientId: string; grantId: string; audience: string; tokenJti: string }
  /** A browser session of the web pages (src/identity/sessions.ts): the person's roles, every scope. */
  | { kind: 'session'; sessionId: string };

export interface Caller {
  userId: string;
  /** The ceiling: an operation needs one of its scopes here, whatever the caller's roles allow. */
  scopes: ReadonlySet<Scope>;
  /**
   * Set when the credential may act on one account only (a token created for an organization account).
   * Personal-account tokens and OAuth tokens act wherever the user may act.
   */
  restrictedToAccountId?: string;
  /**
   * When the credential stops working at the latest (an account token's expiry, an OAuth grant's); a token
   * it creates may not outlive it. Unset for a person in a browser session.
   */
  expiresAt?: Date;
  /**
   * When the credential itself stops working (for an OAuth token, its own expiry, sooner than its grant's):
   * a verification of it may not be reused past this moment.
   */
  validUntil?: Date;
  /**
   * The OAuth grant (an app's consent) the credential depends on: an OAuth token's own, or that of the app
   * that created an account token. A token it creates depends on it too, and dies with it.
   */
  oauthGrantId?: string;
  credential: Credential;
}

/** Turns a bearer string into a caller, or null when this verifier does not recognise or accept it. */
export type BearerVerifier = (token: string) => Promise<Caller | null>;

/** Where an operation came in: the REST API, the MCP server, or a page of the web interface. */
export type Door = 'rest' | 'mcp' | 'web';
