import { Migration } from '@mikro-orm/migrations';

// The credential epoch (Migration20261125000000_credential_epoch) moved by one at each change, so a database
// restored to an earlier point, or a failover to a replica that had not received the last commits, took it
// back to a value it had had, and the next changes counted up through the same values again. An instance
// that kept running across it still held callers verified at those values: once the count came back to
// one, a token revoked after the restore was served from its cache as if nothing had changed. Each move now
// takes the counter to at least the current time in microseconds, so after a restore or failover the next
// change jumps past every value the lost timeline had (they were all taken earlier), and no cached
// verification can match again.
export class Migration20261127000000_epoch_never_repeats extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create or replace function bump_credential_epoch() returns trigger language plpgsql as $$
begin
  update credential_epoch
     set value = greatest(value + 1, (extract(epoch from clock_timestamp()) * 1000000)::bigint);
  return null;
end $$;

create or replace function bump_credential_epoch_for_oidc_deletes() returns trigger language plpgsql as $$
begin
  if exists (select 1 from gone where model in ('AccessToken', 'Grant', 'Client')) then
    update credential_epoch
       set value = greatest(value + 1, (extract(epoch from clock_timestamp()) * 1000000)::bigint);
  end if;
  return null;
end $$;
`);
  }
}
