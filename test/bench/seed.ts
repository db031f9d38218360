// `npm run bench:seed`: grows a (migrated) database to the scale the benchmark compares against an empty
// one. Everything is generated inside PostgreSQL with generate_series, one statement per table, so a
// million glossary entries take seconds rather than the minutes the ORM would need. Ids are derived from a
// tag and a number (md5 → uuid), so the statements can refer to each other's rows without reading them back.
//
// Besides the crowd, it makes two organizations the benchmark and the plan test read:
// - `seed-big`: `bigProjects` projects, `bigMembers` members, `bigOtherLists` invitations, tokens and models;
// - `seed-typical`: 20 projects and 20 members, what most organizations look like.
// `callerUserId` (optional) joins both as an admin, so a token of that user can read their lists.
import pg from 'pg';
import { openDatabase } from '../../src/db/orm.ts';

export interface SeedSizes {
  users: number;
  organizations: number;
  membersPerOrganization: number;
  projects: number;
  glossaries: number;
  entriesPerGlossary: number;
  bigProjects: number;
  bigMembers: number;
  /** Pending invitations, account tokens and models of the big organization (each). */
  bigOtherLists: number;
}

/** The scale of the issue: 100k users, 10k organizations, 200k projects, 1M glossary entries. */
export const FULL_SCALE: SeedSizes = {
  users: 100_000,
  organizations: 10_000,
  membersPerOrganization: 5,
  projects: 200_000,
  glossaries: 5_000,
  entriesPerGlossary: 200,
  bigProjects: 10_000,
  bigMembers: 20_000,
  bigOtherLists: 2_000,
};

export const TYPICAL_SIZE = 20;

// Ids are time-ordered like the service's own (UUIDv7: milliseconds first), so the rows of the big and the
// typical organization sort after the crowd's, as rows created later do. A list whose first page walks the
// primary key and filters by owner would then read the whole crowd first, which is what the plan test and
// the benchmark must be able to see. The rest of the id is derived from the tag and the number.
const CROWD_MS = 1_600_000_000_000;
const LATER_MS = 1_700_000_000_000;
const uuid = (tag: string, n: string, base = CROWD_MS) =>
  `(lpad(to_hex(${base}::bigint + (${n})::bigint), 12, '0') || substr(md5('${tag}-' || (${n})), 1, 20))::uuid`;

export async function seedScale(
  client: pg.ClientBase,
  sizes: SeedSizes,
  options: { callerUserId?: string; log?: (message: string) => void } = {},
): Promise<void> {
  const log = options.log ?? (() => {});
  if (
    sizes.bigMembers > sizes.users ||
    sizes.glossaries > sizes.users ||
    sizes.users <= 13 * sizes.membersPerOrganization
  ) {
    throw new Error(
      'seed sizes: need more users than big-organization members, glossaries and 13× members per organization',
    );
  }
  // The two named organizations come after the crowd's (numbered 1 … organizations).
  const big = String(sizes.organizations + 1);
  const typical = String(sizes.organizations + 2);
  const existing = await client.query(`select 1 from accounts where handle = 'seed-big'`);
  if (existing.rowCount) throw new Error('this database is already seeded (account "seed-big" exists)');

  const steps: [string, string, unknown[]][] = [
    [
      'users',
      `insert into users (id, display_name, email)
       select ${uuid('seed-user', 'i')}, 'Seed user ' || i, 'seed' || i || '@example.com' from generate_series(1, $1) i`,
      [sizes.users],
    ],
    [
      'personal accounts',
      `insert into accounts (id, kind, handle, display_name, user_id)
       select ${uuid('seed-uacct', 'i')}, 'user', 'seed-u' || i, 'Seed user ' || i, ${uuid('seed-user', 'i')}
       from generate_series(1, $1) i`,
      [sizes.users],
    ],
    [
      'organization accounts',
      `insert into accounts (id, kind, handle, display_name)
       select ${uuid('seed-oacct', 'i')}, 'organization',
              case i when $1 + 1 then 'seed-big' when $1 + 2 then 'seed-typical' else 'seed-o' || i end,
              'Seed org ' || i
       from generate_series(1, $1 + 2) i`,
      [sizes.organizations],
    ],
    [
      'organizations',
      `insert into organizations (id, account_id)
       select ${uuid('seed-org', 'i')}, ${uuid('seed-oacct', 'i')}
       from generate_series(1, $1 + 2) i`,
      [sizes.organizations],
    ],
    [
      'memberships',
      // Member k of organization o is user (7o + 13k) mod users: distinct per organization, spread over all.
      `insert into memberships (id, organization_id, user_id, role)
       select ${uuid('seed-mem', 'o * 1000 + k')}, ${uuid('seed-org', 'o')},
              ${uuid('seed-user', '((o * 7 + k * 13) % $2) + 1')}, case when k = 0 then 'admin' else 'member' end
       from generate_series(1, $1) o, generate_series(0, $3 - 1) k`,
      [sizes.organizations, sizes.users, sizes.membersPerOrganization],
    ],
    [
      'projects',
      // Half on personal accounts, half on organizations.
      `insert into projects (id, account_id, handle, name, source_locale, target_locales)
       select ${uuid('seed-proj', 'j')},
              case when j % 2 = 0 then ${uuid('seed-uacct', '((j / 2) % $2) + 1')}
                   else ${uuid('seed-oacct', '((j / 2) % $3) + 1')} end,
              'p' || j, 'Project ' || j, 'en', '{de,fr}'
       from generate_series(1, $1) j`,
      [sizes.projects, sizes.users, sizes.organizations],
    ],
    [
      'glossary versions',
      `insert into glossary_versions (id, account_id, version)
       select ${uuid('seed-gv', 'g')}, ${uuid('seed-uacct', 'g')}, 1 from generate_series(1, $1) g`,
      [sizes.glossaries],
    ],
    [
      'glossary entries',
      `insert into glossary_entries (id, glossary_version_id, position, term, definition, translations)
       select ${uuid('seed-ge', 'g * 10000 + p')}, ${uuid('seed-gv', 'g')}, p, 'term ' || p,
              'What term ' || p || ' means in this product, in one line.',
              jsonb_build_object('de', 'Begriff ' || p, 'fr', 'terme ' || p)
       from generate_series(1, $1) g, generate_series(0, $2 - 1) p`,
      [sizes.glossaries, sizes.entriesPerGlossary],
    ],
    [
      'invitations, tokens and models of the crowd',
      `with invitations as (
         insert into invitations (id, organization_id, email, role, token_hash, status, expires_at)
         select ${uuid('seed-cinv', 'o')}, ${uuid('seed-org', 'o')}, 'crowd' || o || '@example.com', 'member',
                decode(md5('seed-cinv-hash-' || o), 'hex'), 'pending', now() + interval '7 days'
         from generate_series(1, $1) o
       ), models as (
         insert into account_models (id, account_id, handle, model)
         select ${uuid('seed-cmodel', 'o')}, ${uuid('seed-oacct', 'o')}, 'm1', 'openai:model-1'
         from generate_series(1, $1) o
       )
       insert into account_tokens (id, account_id, created_by_id, name, scopes, token_prefix, token_hash, expires_at)
       select ${uuid('seed-ctok', 'i')}, ${uuid('seed-uacct', 'i')}, ${uuid('seed-user', 'i')}, 'Token',
              '{project:read}', 'seed', sha256(('seed-crowd-token-' || i)::bytea), now() + interval '30 days'
       from generate_series(1, $2) i`,
      [sizes.organizations, sizes.users],
    ],
    [
      'big organization',
      `with members as (
         insert into memberships (id, organization_id, user_id, role)
         select ${uuid('seed-bigmem', 'u', LATER_MS)}, ${uuid('seed-org', big)}, ${uuid('seed-user', 'u')},
                case when u = 1 then 'admin' else 'member' end
         from generate_series(1, $2) u
       ), invitations as (
         insert into invitations (id, organization_id, email, role, token_hash, status, expires_at)
         select ${uuid('seed-inv', 'j', LATER_MS)}, ${uuid('seed-org', big)}, 'invitee' || j || '@example.com', 'member',
                decode(md5('seed-inv-hash-' || j), 'hex'), 'pending', now() + interval '7 days'
         from generate_series(1, $3) j
       ), tokens as (
         insert into account_tokens (id, account_id, created_by_id, name, scopes, token_prefix, token_hash, expires_at)
         select ${uuid('seed-tok', 'j', LATER_MS)}, ${uuid('seed-oacct', big)}, ${uuid('seed-user', '1')}, 'Token ' || j,
                '{project:read}', 'seed', sha256(('seed-token-' || j)::bytea), now() + interval '30 days'
         from generate_series(1, $3) j
       ), models as (
         insert into account_models (id, account_id, handle, model)
         select ${uuid('seed-model', 'j', LATER_MS)}, ${uuid('seed-oacct', big)}, 'm' || j, 'openai:model-' || j
         from generate_series(1, $3) j
       )
       insert into projects (id, account_id, handle, name, source_locale, target_locales)
       select ${uuid('seed-bigproj', 'j', LATER_MS)}, ${uuid('seed-oacct', big)}, 'p' || j, 'Project ' || j, 'en', '{de}'
       from generate_series(1, $1) j`,
      [sizes.bigProjects, sizes.bigMembers, sizes.bigOtherLists],
    ],
    [
      'typical organization',
      `with members as (
         insert into memberships (id, organization_id, user_id, role)
         select ${uuid('seed-typmem', 'u', LATER_MS)}, ${uuid('seed-org', typical)}, ${uuid('seed-user', 'u')},
                case when u = 1 then 'admin' else 'member' end
         from generate_series(1, $1) u
       )
       insert into projects (id, account_id, handle, name, source_locale, target_locales)
       select ${uuid('seed-typproj', 'j', LATER_MS)}, ${uuid('seed-oacct', typical)}, 'p' || j, 'Project ' || j, 'en', '{de}'
       from generate_series(1, $1) j`,
      [TYPICAL_SIZE],
    ],
  ];
  if (options.callerUserId) {
    steps.push([
      'caller joins both organizations',
      `insert into memberships (id, organization_id, user_id, role)
       select gen_random_uuid(), ${uuid('seed-org', 'o')}, $1, 'admin' from unnest(array[${big}, ${typical}]) o`,
      [options.callerUserId],
    ]);
  }

  for (const [name, sql, params] of steps) {
    const started = Date.now();
    const result = await client.query(sql, params);
    log(`${name}: ${result.rowCount ?? 0} rows in ${Date.now() - started} ms`);
  }
  // Fresh statistics, so the planner sees the grown tables as an operator's database would after autovacuum.
  await client.query('analyze');
}

// Run as a script: `DATABASE_URL=postgresql://… npm run bench:seed` grows that database (migrating it first).
if (import.meta.main) {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error('Set DATABASE_URL to the database to grow (it is migrated first).');
    process.exit(2);
  }
  const orm = await openDatabase(url);
  await orm.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('set synchronous_commit = off');
    await seedScale(client, FULL_SCALE, { log: (m) => console.log(m) });
  } finally {
    await client.end();
  }
}
