// The scope vocabulary. The spec's object:action list, plus objects the spec names without scopes:
// account models (model:*), account tokens (token:*), connected OAuth apps (apps:*) and the audit log (audit:read). See docs/authorization.md.
export const SCOPES = {
  'user:read': 'Read your profile',
  'user:write': 'Update your profile',
  'account:read': 'List the accounts you can access',
  'organization:read': 'Read organization details and list your organizations',
  'organization:write': 'Create or update organizations',
  'organization:delete': 'Delete organizations',
  'organization:admin': 'Administrative actions on organizations',
  'members:read': 'Read organization members and invitations',
  'members:write': 'Manage organization members and invitations',
  'project:read': 'Read projects',
  'project:write': 'Create or update projects',
  'project:admin': 'Administrative actions on projects',
  'project:delete': 'Delete projects',
  'voice:read': 'Read voice configuration',
  'voice:write': 'Create or update voice configuration',
  'voice:admin': 'Administrative voice actions',
  'glossary:read': 'Read glossary entries',
  'glossary:write': 'Create or update glossary entries',
  'glossary:admin': 'Manage glossary settings',
  'model:read': 'Read account models (never their API keys)',
  'model:write': 'Create, update and delete account models',
  'token:read': 'List account tokens (never their secrets)',
  'token:write': 'Create and revoke account tokens',
  'apps:read': 'List the OAuth apps you have connected',
  'apps:write': 'Disconnect OAuth apps',
  'audit:read': 'Read the audit log of your account and of the organizations you administer',
} as const;

export type Scope = keyof typeof SCOPES;
export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** Granted when an authorization request names no scope: read what exists, change nothing. */
export const DEFAULT_OAUTH_SCOPES: Scope[] = ALL_SCOPES.filter((s) => s.endsWith(':read'));

export function isScope(value: string): value is Scope {
  return Object.hasOwn(SCOPES, value);
}
