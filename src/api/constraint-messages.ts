// Database constraint names mapped to sentences a user can act on. The database is the last line of
// defence (it holds even when two requests race); handlers check first for the common cases.
const MESSAGES: Record<string, string> = {
  accounts_handle_unique: 'That handle is already taken.',
  accounts_handle_format:
    'A handle has 2 to 39 lowercase letters, digits or hyphens, starts with a letter and does not end with a hyphen.',
  accounts_handle_reserved: 'That handle is reserved.',
  projects_account_handle_unique: 'This account already has a project with that handle.',
  memberships_organization_user_unique: 'That user is already a member of the organization.',
  memberships_last_admin: 'An organization must keep at least one admin.',
  invitations_one_pending_per_email: 'A pending invitation for that e-mail already exists.',
  account_models_account_handle_unique: 'This account already has a model with that handle.',
  account_models_one_default: 'This account already has a default model.',
  voice_versions_account_version_unique:
    'Someone saved a new voice version at the same time; reload and retry.',
  glossary_versions_account_version_unique:
    'Someone saved a new glossary version at the same time; reload and retry.',
  glossary_entries_version_term_unique: 'A glossary cannot list the same term twice.',
  glossary_settings_account_id_key:
    'Someone changed the glossary settings at the same time; reload and retry.',
};

/** The name of the violated constraint, for handlers that turn one particular violation into a problem. */
export function constraintName(error: Error & { constraint?: string }): string {
  return error.constraint ?? /constraint "([^"]+)"/.exec(error.message)?.[1] ?? '';
}

export function describeConstraint(error: Error & { constraint?: string; code?: string }): string {
  return MESSAGES[constraintName(error)] ?? 'The change conflicts with data already stored.';
}
