import { Migration } from '@mikro-orm/migrations';

// The audit log's append-only rule had two gaps. Its row trigger let any update set the actor or the
// account to null (meant for the `on delete set null` of a deleted user or account), so an update could
// erase who did something, or take an event out of its account's log, while the user and the account still
// existed. And TRUNCATE fires no row trigger at all, so it emptied the table. Now a reference may only be
// forgotten once the row it names is gone, which is exactly what the foreign key's action does (it runs
// after the user or account is deleted, and sees it deleted), and TRUNCATE is refused outright.
export class Migration20261127120000_audit_append_only extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create or replace function audit_events_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    raise exception 'audit events are never deleted' using errcode = 'insufficient_privilege';
  end if;
  if (new.id, new.occurred_at, new.actor_token_id, new.actor_client_id, new.action, new.resource_type,
      new.resource_id, new.ip, new.user_agent, new.details)
     is distinct from
     (old.id, old.occurred_at, old.actor_token_id, old.actor_client_id, old.action, old.resource_type,
      old.resource_id, old.ip, old.user_agent, old.details)
     or (new.actor_user_id is distinct from old.actor_user_id
         and (new.actor_user_id is not null or exists (select 1 from users where id = old.actor_user_id)))
     or (new.account_id is distinct from old.account_id
         and (new.account_id is not null or exists (select 1 from accounts where id = old.account_id))) then
    raise exception 'audit events are never edited' using errcode = 'insufficient_privilege';
  end if;
  return new;
end;
$$;

create function audit_events_never_truncated() returns trigger language plpgsql as $$
begin
  raise exception 'audit events are never deleted' using errcode = 'insufficient_privilege';
end;
$$;
create trigger audit_events_never_truncated before truncate on audit_events
  for each statement execute function audit_events_never_truncated();
`);
  }
}
