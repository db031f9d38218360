import { Migration } from '@mikro-orm/migrations';

// The whole domain model. Constraints live here, in the database, so that no code path (a handler, a
// script, a future service) can store what the model forbids. Entities in ../entities map onto it.
export class Migration20261122000000_initial extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
create table users (
  id uuid primary key,
  display_name text not null check (length(display_name) between 1 and 100),
  email text check (email is null or email ~ '^[^@\\s]+@[^@\\s]+$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table identities (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  provider text not null check (length(provider) between 1 and 100),
  subject text not null check (length(subject) between 1 and 255),
  email text,
  email_verified boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint identities_provider_subject_unique unique (provider, subject)
);
create index identities_user_id_idx on identities(user_id);

create table accounts (
  id uuid primary key,
  kind text not null check (kind in ('user', 'organization')),
  handle text not null,
  display_name text not null check (length(display_name) between 1 and 100),
  visibility text not null default 'private' check (visibility in ('private', 'public')),
  user_id uuid unique references users(id) on delete cascade,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint accounts_handle_unique unique (handle),
  constraint accounts_handle_format check (handle ~ '^[a-z][a-z0-9-]{0,37}[a-z0-9]$'),
  constraint accounts_handle_reserved check (handle not in (
    'api', 'oauth', 'mcp', 'admin', 'settings', 'new', 'login', 'logout', 'signin', 'signup', 'account',
    'accounts', 'organizations', 'orgs', 'well-known', 'static', 'assets', 'help', 'docs', 'www', 'root',
    'system', 'healthz', 'readyz', 'metrics', 'me', 'user', 'users', 'apps', 'tokens')),
  constraint accounts_user_kind check ((kind = 'user') = (user_id is not null))
);

create table organizations (
  id uuid primary key,
  account_id uuid not null unique references accounts(id) on delete cascade,
  created_by_id uuid references users(id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table memberships (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  role text not null check (role in ('admin', 'member')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint memberships_organization_user_unique unique (organization_id, user_id)
);
create index memberships_user_id_idx on memberships(user_id);

-- An organization always keeps at least one admin. Checked at commit time, so a transaction may swap
-- admins freely, and skipped when the organization itself is being deleted.
create function memberships_keep_an_admin() returns trigger language plpgsql as $$
begin
  if old.role = 'admin'
     and exists (select 1 from organizations o where o.id = old.organization_id)
     and not exists (select 1 from memberships m where m.organization_id = old.organization_id and m.role = 'admin')
  then
    raise exception 'organization % must keep at least one admin', old.organization_id
      using errcode = '23514', constraint = 'memberships_last_admin';
  end if;
  return null;
end $$;
create constraint trigger memberships_last_admin
  after update or delete on memberships
  deferrable initially deferred
  for each row execute function memberships_keep_an_admin();

create table invitations (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  email text not null check (email = lower(email) and email ~ '^[^@\\s]+@[^@\\s]+$'),
  role text not null check (role in ('admin', 'member')),
  token_hash bytea not null unique,
  status text not null default 'pending'
    check (status in ('pending', 'accepted', 'declined', 'revoked', 'expired')),
  expires_at timestamptz not null,
  invited_by_id uuid references users(id) on delete set null,
  responded_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index invitations_one_pending_per_email
  on invitations(organization_id, email) where status = 'pending';

create table organization_domains (
  id uuid primary key,
  organization_id uuid not null references organizations(id) on delete cascade,
  domain text not null check (domain = lower(domain) and domain ~ '^[a-z0-9.-]+\\.[a-z]{2,}$'),
  verification_token_hash bytea not null,
  verified_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint organization_domains_unique unique (organization_id, domain)
);
-- A domain verified by one organization cannot be verified by another.
create unique index organization_domains_verified_once on organization_domains(domain) where verified_at is not null;

create table organization_sign_in_providers (
  id uuid primary key,
  organization_id uuid not null unique references organizations(id) on delete cascade,
  kind text not null check (kind in ('oidc')),
  issuer text not null check (issuer ~ '^https://'),
  client_id text not null,
  client_secret_encrypted bytea,
  enabled boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table projects (
  id uuid primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  handle text not null check (handle ~ '^[a-z][a-z0-9-]{0,37}[a-z0-9]$'),
  name text not null check (length(name) between 1 and 100),
  description text not null default '' check (length(description) <= 2000),
  source_locale text not null check (source_locale ~ '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$'),
  target_locales text[] not null default '{}'
    check (array_position(target_locales, source_locale) is null and cardinality(target_locales) <= 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint projects_account_handle_unique unique (account_id, handle)
);

create table voice_versions (
  id uuid primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  version integer not null check (version >= 1),
  tone text not null default '' check (length(tone) <= 500),
  formality text not null default 'neutral' check (formality in ('informal', 'neutral', 'formal')),
  target_audience text not null default '' check (length(target_audience) <= 1000),
  guidelines text not null default '' check (length(guidelines) <= 20000),
  target_countries text[] not null default '{}' check (cardinality(target_countries) <= 250),
  cultural_notes text not null default '' check (length(cultural_notes) <= 10000),
  locale_overrides jsonb not null default '{}' check (jsonb_typeof(locale_overrides) = 'object'),
  change_note text not null default '' check (length(change_note) <= 500),
  author_id uuid references users(id) on delete set null,
  created_at timestamptz not null default now(),
  constraint voice_versions_account_version_unique unique (account_id, version)
);

create table glossary_versions (
  id uuid primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  version integer not null check (version >= 1),
  change_note text not null default '' check (length(change_note) <= 500),
  author_id uuid references users(id) on delete set null,
  created_at timestamptz not null default now(),
  constraint glossary_versions_account_version_unique unique (account_id, version)
);

create table glossary_entries (
  id uuid primary key,
  glossary_version_id uuid not null references glossary_versions(id) on delete cascade,
  position integer not null check (position >= 0),
  term text not null check (length(term) between 1 and 200),
  definition text not null default '' check (length(definition) <= 2000),
  case_sensitive boolean not null default false,
  do_not_translate boolean not null default false,
  forbidden boolean not null default false,
  translations jsonb not null default '{}' check (jsonb_typeof(translations) = 'object'),
  constraint glossary_entries_version_term_unique unique (glossary_version_id, term),
  constraint glossary_entries_version_position_unique unique (glossary_version_id, position)
);

create table glossary_settings (
  id uuid primary key,
  account_id uuid not null unique references accounts(id) on delete cascade,
  enforcement_mode text not null default 'warn' check (enforcement_mode in ('off', 'warn', 'strict')),
  revision integer not null default 1 check (revision >= 1),
  updated_by_id uuid references users(id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table account_models (
  id uuid primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  handle text not null check (handle ~ '^[a-z][a-z0-9-]{0,37}[a-z0-9]$'),
  model text not null check (model ~ '^[a-z0-9][a-z0-9._-]*:[^\\s]+$' and length(model) <= 200),
  base_url text check (base_url is null or base_url ~ '^https?://'),
  api_key_encrypted bytea,
  api_key_last4 text check (api_key_last4 is null or length(api_key_last4) <= 4),
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint account_models_account_handle_unique unique (account_id, handle),
  constraint account_models_key_pair check ((api_key_encrypted is null) = (api_key_last4 is null))
);
create unique index account_models_one_default on account_models(account_id) where is_default;

create table account_tokens (
  id uuid primary key,
  account_id uuid not null references accounts(id) on delete cascade,
  created_by_id uuid not null references users(id) on delete cascade,
  name text not null check (length(name) between 1 and 100),
  description text not null default '' check (length(description) <= 500),
  scopes text[] not null check (cardinality(scopes) >= 1),
  token_prefix text not null,
  token_hash bytea not null,
  expires_at timestamptz,
  last_used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint account_tokens_token_hash_unique unique (token_hash),
  constraint account_tokens_hash_length check (octet_length(token_hash) = 32)
);
create index account_tokens_account_id_idx on account_tokens(account_id);

create table audit_events (
  id uuid primary key,
  occurred_at timestamptz not null default now(),
  actor_user_id uuid references users(id) on delete set null,
  actor_token_id uuid,
  actor_client_id text,
  account_id uuid references accounts(id) on delete set null,
  action text not null,
  resource_type text not null,
  resource_id text,
  ip text,
  user_agent text,
  details jsonb not null default '{}'
);
create index audit_events_account_idx on audit_events(account_id, occurred_at desc);
create index audit_events_actor_idx on audit_events(actor_user_id, occurred_at desc);

-- Every oidc-provider model (clients, sessions, interactions, codes, grants, tokens) as a JSON payload.
create table oidc_models (
  model text not null,
  id text not null,
  payload jsonb not null,
  grant_id text,
  user_code text,
  uid text,
  expires_at timestamptz,
  consumed_at timestamptz,
  created_at timestamptz not null default now(),
  primary key (model, id)
);
create index oidc_models_grant_id_idx on oidc_models(grant_id) where grant_id is not null;
create index oidc_models_uid_idx on oidc_models(uid) where uid is not null;
create index oidc_models_expires_at_idx on oidc_models(expires_at) where expires_at is not null;
`);
  }
}
