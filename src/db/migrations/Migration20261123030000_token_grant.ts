import { Migration } from '@mikro-orm/migrations';

// An account token created through an OAuth app's access token belongs to that app's grant: it dies with
// the grant (disconnect, refresh-token replay, expiry). Grant ids are oidc-provider's strings, not UUIDs,
// and live in oidc_models, which has no single-column key to reference; the verifier joins on it instead.
export class Migration20261123030000_token_grant extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
alter table account_tokens add column oauth_grant_id text;
create index account_tokens_oauth_grant_id_idx on account_tokens(oauth_grant_id) where oauth_grant_id is not null;
`);
  }
}
