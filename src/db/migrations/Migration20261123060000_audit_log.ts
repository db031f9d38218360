import { Migration } from '@mikro-orm/migrations';

// The audit log becomes readable through the API (listAuditEvents): keyset pages in id order per account,
// filtered by actor, need (account_id, id) and (actor_user_id, id). And it becomes append-only in the
// database itself: no code path may rewrite or delete history. The one update allowed is the `on delete
// set null` of a deleted user or account, which only forgets a reference.
export class Migration20261123060000_audit_log extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
drop index audit_events_account_idx;
drop index audit_events_actor_idx;
create index audit_events_account_id_idx on audit_events(account_id, id);
create index audit_events_actor_id_idx on audit_events(actor_user_id, id);

create function audit_events_append_only() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    raise exception 'audit events are never deleted' using errcode = 'insufficient_privilege';
  end if;
  if (new.id, new.occurred_at, new.actor_token_id, new.actor_client_id, new.action, new.resource_type,
      new.resource_id, new.ip, new.user_agent, new.details)
     is distinct from
     (old.id, old.occurred_at, old.actor_token_id, old.actor_client_id, old.action, old.resource_type,
      old.resource_id, old.ip, old.user_agent, old.details)
     or (new.actor_user_id is distinct from old.actor_user_id and new.actor_user_id is not null)
     or (new.account_id is distinct from old.account_id and new.account_id is not null) then
    raise exception 'audit events are never edited' using errcode = 'insufficient_privilege';
  end if;
  return new;
end;
$$;
create trigger audit_events_append_only before update or delete on audit_events
  for each row execute function audit_events_append_only();
`);
  }
}
