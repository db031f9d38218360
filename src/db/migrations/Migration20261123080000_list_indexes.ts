import { Migration } from '@mikro-orm/migrations';

// Every list is keyset-paginated on the row id inside one owner (an account or an organization). Without an
// index on (owner, id) PostgreSQL answers a first page by walking the primary key and filtering out every
// other owner's rows, so the page got slower as the table grew; with it a first page reads the page size of
// index entries whatever the size of the list. Versions need nothing new: their (account, version) unique
// constraints already serve the history and the "current version" lookups.
export class Migration20261123080000_list_indexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create index projects_account_id_id_idx on projects(account_id, id);
create index account_models_account_id_id_idx on account_models(account_id, id);
-- (account, id) serves the API list and every lookup the single-column index served, so it replaces it.
create index account_tokens_account_id_id_idx on account_tokens(account_id, id);
drop index account_tokens_account_id_idx;
-- The token page of the web settings lists newest first.
create index account_tokens_account_created_idx on account_tokens(account_id, created_at, id);
create index memberships_organization_id_id_idx on memberships(organization_id, id);
-- The last-admin trigger and the admin lock look for an organization's admins on every membership change;
-- in a 20,000-member organization that must not read every membership.
create index memberships_organization_admins_idx on memberships(organization_id) where role = 'admin';
create index invitations_organization_id_id_idx on invitations(organization_id, id);
-- The device flow finds its code by user code; every other oidc-provider lookup already has an index.
create index oidc_models_user_code_idx on oidc_models(model, user_code) where user_code is not null;
`);
  }
}
