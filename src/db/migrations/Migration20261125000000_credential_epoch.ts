import { Migration } from '@mikro-orm/migrations';

// A counter that moves whenever a bearer credential may have stopped working or changed: an account token
// revoked, re-scoped or deleted (directly or by a cascade from its account or user), an OAuth access token or
// grant deleted (revocation, a disconnected app, a refresh-token replay, the expiry sweep), a grant or client
// changed. Instances keep verified callers in memory (src/authz/caller-cache.ts) tagged with the value they
// were verified at, and every request reads the current value in a statement it sends anyway: a credential
// changed on any instance is re-verified on the next request everywhere, with no message to miss.
//
// It is a row in a table, not a sequence, on purpose: a sequence moves before the revoking transaction
// commits, so a request could see the new value, re-verify against the not-yet-committed old state, and cache
// it under the new value. The row moves at commit, with the revocation.
export class Migration20261125000000_credential_epoch extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create table credential_epoch (
  id boolean primary key default true check (id),
  value bigint not null
);
insert into credential_epoch (id, value) values (true, 1);

create function bump_credential_epoch() returns trigger language plpgsql as $$
begin
  update credential_epoch set value = value + 1;
  return null;
end $$;

-- oidc_models also holds sessions, interactions, codes and refresh tokens, deleted on every sign-in and
-- rotation: only the models a bearer check reads move the counter.
create function bump_credential_epoch_for_oidc_deletes() returns trigger language plpgsql as $$
begin
  if exists (select 1 from gone where model in ('AccessToken', 'Grant', 'Client')) then
    update credential_epoch set value = value + 1;
  end if;
  return null;
end $$;

create trigger account_tokens_changed after update on account_tokens for each row
  when ((old.revoked_at, old.expires_at, old.scopes, old.token_hash, old.account_id, old.created_by_id, old.oauth_grant_id)
        is distinct from
        (new.revoked_at, new.expires_at, new.scopes, new.token_hash, new.account_id, new.created_by_id, new.oauth_grant_id))
  execute function bump_credential_epoch();
create trigger account_tokens_deleted after delete on account_tokens
  for each statement execute function bump_credential_epoch();
create trigger account_tokens_truncated after truncate on account_tokens
  for each statement execute function bump_credential_epoch();

create trigger oidc_models_changed after update on oidc_models for each row
  when (new.model in ('AccessToken', 'Grant', 'Client'))
  execute function bump_credential_epoch();
create trigger oidc_models_deleted after delete on oidc_models referencing old table as gone
  for each statement execute function bump_credential_epoch_for_oidc_deletes();
create trigger oidc_models_truncated after truncate on oidc_models
  for each statement execute function bump_credential_epoch();
`);
  }
}
