import { Migration } from '@mikro-orm/migrations';

// Projects and organizations are edited in place by several people and agents: each row gets a revision
// behind its ETag, so an update based on an earlier read can be refused (If-Match) instead of silently
// undoing a change made meanwhile. The database moves the revision, not the service: every update that
// changes what the API shows counts, whichever instance or tool wrote it (an instance not yet upgraded
// during a rolling upgrade, the admin CLI), and an update that changes nothing of it keeps the revision, so
// the same PATCH sent twice leaves the same ETag.
export class Migration20261128000000_edit_revisions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
alter table projects add column revision integer not null default 1 check (revision >= 1);
alter table accounts add column revision integer not null default 1 check (revision >= 1);

create function next_edit_revision() returns trigger language plpgsql as $$
begin
  new.revision := old.revision + 1;
  return new;
end $$;

create trigger projects_next_revision before update on projects for each row
  when ((old.name, old.description, old.source_locale, old.target_locales)
        is distinct from (new.name, new.description, new.source_locale, new.target_locales))
  execute function next_edit_revision();

create trigger accounts_next_revision before update on accounts for each row
  when ((old.handle, old.display_name, old.visibility)
        is distinct from (new.handle, new.display_name, new.visibility))
  execute function next_edit_revision();
`);
  }
}
