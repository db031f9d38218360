import { Migration } from '@mikro-orm/migrations';

// Sign-in for people: browser sessions, single-use sign-in attempts (the `state` of a provider round
// trip), and what an organization decides about its own identity provider.
export class Migration20261123010000_identity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create table browser_sessions (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  -- SHA-256 of the cookie value; the cookie value itself is never stored.
  token_hash bytea not null unique,
  user_agent text,
  ip text,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null,
  ended_at timestamptz
);
create index browser_sessions_user_id_idx on browser_sessions(user_id);

-- One row per sign-in round trip to a provider; deleted when its callback arrives, so a state is used once.
create table sign_in_attempts (
  id uuid primary key,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);

-- http issuers are for development and tests; the service refuses them in production.
alter table organization_sign_in_providers drop constraint organization_sign_in_providers_issuer_check;
alter table organization_sign_in_providers add constraint organization_sign_in_providers_issuer_check
  check (issuer ~ '^https?://');
alter table organization_sign_in_providers
  add column enroll_role text check (enroll_role in ('admin', 'member')),
  add column required boolean not null default false;
`);
  }
}
