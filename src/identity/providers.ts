// The identity providers people sign in with, through openid-client: authorization code + PKCE S256 +
// state (+ nonce and a checked ID token for OpenID providers). Each answers with a Profile; an e-mail
// counts as verified only when the provider says so. GitHub is plain OAuth 2.0 plus its REST API.
//
// Whose URLs these are decides how they are fetched. GitHub, Google and OIDC_ISSUER are the operator's own
// settings, trusted like the rest of the configuration (an operator may well run OIDC_ISSUER on a private
// network), so openid-client uses the plain fetch for them. An organization's provider is set by its admins,
// so every request for it goes through the address guard (org-provider-fetch.ts): checkIssuer and
// organizationLeg are the only ways in for one.
import type { Configuration, CustomFetch } from 'openid-client';
import type { Config, OidcProviderConfig } from '../config/index.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import { findTextIssues } from '../lib/text-input.ts';
import { asciiEmail } from './domains.ts';
import { guardRefusal, orgProviderFetch } from './org-provider-fetch.ts';

/** Only instances where people sign in with a provider load it. */
const client = onFirstUse<typeof import('openid-client')>('openid-client');

export type ProviderId = 'github' | 'google' | 'oidc' | 'org';

/** Who the provider says signed in. `provider` + `subject` identify the person for good. */
export interface Profile {
  /** 'github', 'google', 'oidc', or 'org:<organization id>'. */
  provider: string;
  subject: string;
  /** Lowercased; present only when the provider vouched for it (verified). */
  verifiedEmail?: string;
  /** An e-mail the provider gave without saying it is verified: stored, never trusted. */
  unverifiedEmail?: string;
  /** A username to propose a handle from. */
  username?: string;
  name?: string;
}

/** What the browser must bring back: kept in the signed sign-in cookie between the two legs. */
export interface Checks {
  state: string;
  nonce: string;
  verifier: string;
}

/** A failed sign-in with words for the person; never a 500. */
export class SignInError extends Error {}

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface Leg {
  /** Where to send the browser. */
  authorizationUrl(checks: Checks, redirectUri: string): Promise<URL>;
  /** Completes the callback (the full URL the provider redirected to) into a profile. */
  profile(callbackUrl: URL, checks: Checks): Promise<Profile>;
}

export const newChecks = (): Checks => ({
  state: client().randomState(),
  nonce: client().randomNonce(),
  verifier: client().randomPKCECodeVerifier(),
});

const DISCOVERY_TTL_MS = 10 * 60 * 1000;

/** Issuers over plain http are accepted only outside production (config refuses them there). */
function insecureAllowed(url: string, production: boolean): boolean {
  return !production && url.startsWith('http:');
}

/**
 * Discovery documents are fetched once per issuer and client every few minutes, not per sign-in; kept apart
 * by the fetch they were made with, so a Configuration made under one address policy (or none, for the
 * operator's providers) never serves a request under another (two services in one test process).
 */
type Discovered = Map<string, { at: number; config: Promise<Configuration> }>;
const operatorDiscoveries: Discovered = new Map();
const guardedDiscoveries = new WeakMap<CustomFetch, Discovered>();

function discoveriesFor(fetch: CustomFetch | undefined): Discovered {
  if (!fetch) return operatorDiscoveries;
  const discovered = guardedDiscoveries.get(fetch) ?? new Map();
  guardedDiscoveries.set(fetch, discovered);
  return discovered;
}

/**
 * The provider's Configuration. With `fetch` (an organization's provider), discovery and every later request
 * made with the Configuration (token endpoint, JWKS, userinfo) use it: openid-client keeps the customFetch
 * given to discovery() on the Configuration it returns.
 */
function discover(settings: OidcSettings, production: boolean, fetch?: CustomFetch): Promise<Configuration> {
  const discoveries = discoveriesFor(fetch);
  const key = `${settings.issuer}\0${settings.clientId}\0${settings.clientSecret}`;
  const cached = discoveries.get(key);
  if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.config;
  const config = client().discovery(
    new URL(settings.issuer),
    settings.clientId,
    settings.clientSecret,
    client().ClientSecretBasic(settings.clientSecret),
    {
      execute: insecureAllowed(settings.issuer, production) ? [client().allowInsecureRequests] : [],
      timeout: 10,
      ...(fetch ? { [client().customFetch]: fetch } : {}),
    },
  );
  // A failure is not cached: the next sign-in tries again.
  config.catch(() => discoveries.delete(key));
  discoveries.set(key, { at: Date.now(), config });
  return config;
}

/**
 * Why an issuer cannot serve as an organization's provider (it is at an address the guard refuses, its
 * discovery document cannot be fetched, names another issuer, or lacks the endpoints sign-in needs), or
 * undefined when it can.
 */
export async function checkIssuer(issuer: string, config: Config): Promise<string | undefined> {
  const production = config.nodeEnv === 'production';
  try {
    const discovered = await client().discovery(new URL(issuer), 'check', undefined, client().None(), {
      execute: insecureAllowed(issuer, production) ? [client().allowInsecureRequests] : [],
      timeout: 10,
      [client().customFetch]: orgProviderFetch(config),
    });
    const metadata = discovered.serverMetadata();
    if (!metadata.authorization_endpoint || !metadata.token_endpoint)
      return `The provider at ${issuer} has no authorization or token endpoint in its discovery document.`;
    if (!metadata.jwks_uri)
      return `The provider at ${issuer} publishes no keys (jwks_uri) to check ID tokens with.`;
    return undefined;
  } catch (error) {
    const refused = guardRefusal(error);
    if (refused) return `The issuer ${issuer} cannot be used: ${refused.message}.`;
    return `No valid OpenID discovery document for the issuer ${issuer} (at ${issuer}/.well-known/openid-configuration).`;
  }
}

/** Sign-in through an organization's own provider (its requests guarded, see the top of this file). */
export function organizationLeg(settings: OidcSettings, providerKey: string, config: Config): Leg {
  return oidcLeg(settings, providerKey, config.nodeEnv === 'production', orgProviderFetch(config));
}

function oidcLeg(settings: OidcSettings, providerKey: string, production: boolean, fetch?: CustomFetch): Leg {
  return {
    async authorizationUrl(checks, redirectUri) {
      const config = await discoverOrFail(settings, production, fetch);
      return client().buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        state: checks.state,
        nonce: checks.nonce,
        code_challenge: await client().calculatePKCECodeChallenge(checks.verifier),
        code_challenge_method: 'S256',
      });
    },
    async profile(callbackUrl, checks) {
      const config = await discoverOrFail(settings, production, fetch);
      const tokens = await grant(config, callbackUrl, checks, true);
      const claims = tokens.claims();
      if (!claims) throw new SignInError('The provider did not say who signed in.');
      const email = emailClaim(claims.email);
      const verified = claims.email_verified === true;
      return storable({
        provider: providerKey,
        subject: claims.sub,
        verifiedEmail: verified ? email : undefined,
        unverifiedEmail: verified ? undefined : email,
        username: stringClaim(claims.preferred_username) ?? email?.split('@')[0],
        name: stringClaim(claims.name),
      });
    },
  };
}

/** Said when the guard refused an organization's provider: trying again will not help, its admin can. */
const REFUSED_PROVIDER =
  "Your organization's identity provider is at an address this service does not connect to. Ask your organization's admins to check its settings.";

async function discoverOrFail(settings: OidcSettings, production: boolean, fetch?: CustomFetch) {
  try {
    return await discover(settings, production, fetch);
  } catch (error) {
    if (guardRefusal(error)) throw new SignInError(REFUSED_PROVIDER);
    throw new SignInError('The identity provider could not be reached. Try again later.');
  }
}

/** Redeems the code: state, PKCE, and for OpenID providers the ID token (issuer, audience, nonce, expiry). */
async function grant(config: Configuration, callbackUrl: URL, checks: Checks, openid: boolean) {
  try {
    return await client().authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: checks.verifier,
      expectedState: checks.state,
      ...(openid ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
    });
  } catch (error) {
    // The token endpoint (or the keys) at an address the guard refuses: its discovery document names it.
    if (guardRefusal(error)) throw new SignInError(REFUSED_PROVIDER);
    if (error instanceof client().AuthorizationResponseError)
      throw new SignInError(
        error.error === 'access_denied'
          ? 'You did not allow the sign-in.'
          : 'The provider refused the sign-in.',
      );
    throw new SignInError('The sign-in could not be completed with the provider.');
  }
}

/** A claim as text we can store and show: none when empty or carrying control characters (NUL included). */
function stringClaim(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && findTextIssues(value, '').length === 0
    ? value
    : undefined;
}

/** An e-mail claim, lowercased; none when it is not one address (the users table would refuse it). */
function emailClaim(value: unknown): string | undefined {
  const text = stringClaim(value)?.toLowerCase();
  if (!text || text.length > 320 || !/^[^@\s]+@[^@\s]+$/.test(text)) return undefined;
  // Kept with its domain in ASCII (punycode), the form domains are verified in and invitations are sent to:
  // uma@bücher.example is uma@xn--bcher-kva.example, or removing that domain, an invitation to her and the
  // check that she is a member already each missed her.
  return asciiEmail(text);
}

/**
 * A subject is kept for good (identities.subject, 1 to 255 characters): one we cannot store is a failed
 * sign-in with words for the person, not a 500. A provider's subject is its own choice (an organization's
 * provider is a stranger's).
 */
function storable(profile: Profile): Profile {
  if (profile.subject.length > 255 || stringClaim(profile.subject) === undefined)
    throw new SignInError('The provider sent an identifier for you that this service cannot use.');
  return profile;
}

function githubLeg(settings: NonNullable<Config['providers']['github']>, production: boolean): Leg {
  const config = new (client().Configuration)(
    {
      issuer: settings.url,
      authorization_endpoint: `${settings.url}/login/oauth/authorize`,
      token_endpoint: `${settings.url}/login/oauth/access_token`,
    },
    settings.clientId,
    settings.clientSecret,
    client().ClientSecretPost(settings.clientSecret),
  );
  if (insecureAllowed(settings.url, production) || insecureAllowed(settings.apiUrl, production))
    client().allowInsecureRequests(config);
  const api = async (accessToken: string, path: string): Promise<unknown> => {
    const response = await client()
      .fetchProtectedResource(
        config,
        accessToken,
        new URL(`${settings.apiUrl}${path}`),
        'GET',
        undefined,
        new Headers({ accept: 'application/vnd.github+json', 'user-agent': 'localization-service' }),
      )
      .catch(() => undefined);
    const body = response?.ok ? await response.json().catch(() => undefined) : undefined;
    if (!body || typeof body !== 'object') throw new SignInError('GitHub did not tell who signed in.');
    return body;
  };
  return {
    async authorizationUrl(checks, redirectUri) {
      return client().buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'read:user user:email',
        state: checks.state,
        code_challenge: await client().calculatePKCECodeChallenge(checks.verifier),
        code_challenge_method: 'S256',
        allow_signup: 'true',
      });
    },
    async profile(callbackUrl, checks) {
      const tokens = await grant(config, callbackUrl, checks, false);
      const user = (await api(tokens.access_token, '/user')) as {
        id?: unknown;
        login?: unknown;
        name?: unknown;
      };
      if (typeof user.id !== 'number' && typeof user.id !== 'string')
        throw new SignInError('GitHub did not tell who signed in.');
      const emails = (await api(tokens.access_token, '/user/emails')) as {
        email?: unknown;
        primary?: unknown;
        verified?: unknown;
      }[];
      const primary = Array.isArray(emails) ? emails.find((e) => e.primary === true) : undefined;
      const email = emailClaim(primary?.email);
      return storable({
        provider: 'github',
        subject: String(user.id),
        verifiedEmail: primary?.verified === true ? email : undefined,
        unverifiedEmail: primary?.verified === true ? undefined : email,
        username: stringClaim(user.login),
        name: stringClaim(user.name),
      });
    },
  };
}

/**
 * The configured providers (not the organizations' own), in the order the sign-in page shows them. Their
 * URLs are the operator's settings: no address guard (see the top of this file).
 */
export function configuredProviders(config: Config): { id: ProviderId; label: string; leg: Leg }[] {
  const production = config.nodeEnv === 'production';
  const { github, google, oidc } = config.providers;
  const list: { id: ProviderId; label: string; leg: Leg }[] = [];
  if (github) list.push({ id: 'github', label: 'GitHub', leg: githubLeg(github, production) });
  if (google) list.push({ id: 'google', label: 'Google', leg: oidcLeg(google, 'google', production) });
  if (oidc)
    list.push({ id: 'oidc', label: oidc.name, leg: oidcLeg(oidc as OidcProviderConfig, 'oidc', production) });
  return list;
}
