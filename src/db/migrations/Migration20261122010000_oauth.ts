import { Migration } from '@mikro-orm/migrations';

// Grants are looked up by user and client: to reuse a remembered consent and to list or revoke a user's
// connected apps. An expression index keeps those lookups independent of the number of stored rows.
export class Migration20261122010000_oauth extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create index oidc_models_grant_account_client_idx
  on oidc_models ((payload->>'accountId'), (payload->>'clientId'))
  where model = 'Grant';
`);
  }
}
