// Administration command for an install, run against DATABASE_URL: `npm run admin -- <command> [options]`.
// It is how a production install gets its first user, organization and token (no development sign-in
// there). Each command applies pending migrations first. Bad input: a message on stderr and exit code 2.
// Each change records an audit event, as the same change through the service would (door `cli`).
import { parseArgs } from 'node:util';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ALL_SCOPES, isScope, type Scope } from '../authz/scopes.ts';
import { ConfigError, loadAdminConfig } from '../config/index.ts';
import { Account, Identity, Membership, Organization, User } from '../db/entities/index.ts';
import { connectDatabase, migrateDatabase, migrationReport, type Orm } from '../db/orm.ts';
import { type AuditRecord, recordAudit } from '../domain/audit.ts';
import { createOrganization } from '../domain/organizations.ts';
import { issueAccountToken, TOKEN_LIMITS, tokenExpiry } from '../domain/tokens.ts';
import { createUserWithAccount } from '../domain/users.ts';
import { HANDLE_PATTERN, RESERVED_HANDLES } from '../domain/validation.ts';
import { asciiEmail } from '../identity/domains.ts';
import { findTextIssues } from '../lib/text-input.ts';

const USAGE = `Usage: npm run admin -- <command> [options]

Commands (each applies pending database migrations first; DATABASE_URL names the database):
  migrate
      Apply pending migrations, name them, and exit.
  create-user --handle <handle> --email <email> [--name <display name>] [--identity <provider>:<subject>]
      Create a user and their personal account. --identity links a way to sign in in the browser:
      github:<numeric GitHub user id>, google:<Google "sub">, or oidc:<subject at OIDC_ISSUER>.
  create-org --handle <handle> --admin <user handle> [--name <display name>]
      Create an organization with that user as its admin.
  create-token --user <user handle> --name <name> [--account <handle>] [--scopes <a,b|all>] [--days <n>]
      Create an account token for the user's personal account, or for --account (an organization the
      user administers). Prints the token once; it is stored only as a hash.`;

class UsageError extends Error {}

/** A display name's bound (openapi.yaml: displayName of users and organizations; the schema checks it too). */
const DISPLAY_NAME_MAX_LENGTH = 100;
const EMAIL = /^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$/;
/** The longest address the API stores (openapi.yaml's maxLength on a user's e-mail, RFC 5321's path limit). */
const EMAIL_MAX_LENGTH = 254;
/** A way to sign in: a provider and the subject it names the person by (1 to 255 characters, as stored). */
const IDENTITY = /^(github|google|oidc):\P{Cc}{1,255}$/u;

/** Length in characters (code points), as the API's schema counts it: an emoji is one, not two. */
const characters = (text: string) => [...text].length;

/**
 * Records a change the command made, as the API records the same change (same action, resource and details),
 * with `userId` as the actor and the door `cli` (no address or request id); written in the change's flush.
 */
function auditCli(
  em: EntityManager,
  userId: string,
  record: Pick<AuditRecord, 'action' | 'resourceType' | 'resourceId' | 'account' | 'details'>,
): void {
  recordAudit(em, { userId }, { ...record, door: 'cli', meta: {} });
}

function handleOf(value: string | undefined, option: string): string {
  if (!value) throw new UsageError(`--${option} is required.`);
  if (!HANDLE_PATTERN.test(value) || RESERVED_HANDLES.has(value))
    throw new UsageError(
      `--${option} "${value}" is not a usable handle: 2 to 39 lowercase letters, digits or hyphens, starting with a letter, not a reserved word.`,
    );
  return value;
}

async function userByHandle(orm: Orm, handle: string) {
  const account = await orm.em.fork().findOne(Account, { handle, kind: 'user' });
  if (!account?.user) throw new UsageError(`No user has the handle "${handle}".`);
  return { userId: account.user.id, account };
}

async function run(argv: string[], env: NodeJS.ProcessEnv, out: (line: string) => void): Promise<void> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help') {
    out(USAGE);
    if (!command) throw new UsageError('A command is required.');
    return;
  }
  const options = {
    handle: { type: 'string' },
    email: { type: 'string' },
    name: { type: 'string' },
    identity: { type: 'string' },
    admin: { type: 'string' },
    user: { type: 'string' },
    account: { type: 'string' },
    scopes: { type: 'string' },
    days: { type: 'string' },
  } as const;
  let values: { [K in keyof typeof options]?: string };
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (!['migrate', 'create-user', 'create-org', 'create-token'].includes(command))
    throw new UsageError(`Unknown command "${command}".`);

  // Input is checked before the database is touched. Every option is text as the API would take it: the
  // API's rule for every string a client sends (no control characters but tab, line feed and carriage
  // return), checked before any other so that no message repeats a value that would garble the terminal.
  for (const [option, value] of Object.entries(values)) {
    const [issue] = findTextIssues(value, '');
    if (issue) throw new UsageError(`--${option} ${issue.message}.`);
  }
  // A name is what the API would take: 1 to 100 characters (a token's: its own bound).
  if (values.name !== undefined) {
    const max = command === 'create-token' ? TOKEN_LIMITS.nameMaxLength : DISPLAY_NAME_MAX_LENGTH;
    if (values.name.length === 0 || characters(values.name) > max)
      throw new UsageError(`--name must be 1 to ${max} characters.`);
  }
  if (command === 'create-user') {
    handleOf(values.handle, 'handle');
    if (!values.email || !EMAIL.test(values.email))
      throw new UsageError('--email must be an e-mail address.');
    if ([...values.email].length > EMAIL_MAX_LENGTH)
      throw new UsageError(`--email must be at most ${EMAIL_MAX_LENGTH} characters, as the API allows.`);
    // A provider's subject is an identifier: no tab or line break either.
    if (values.identity !== undefined && !IDENTITY.test(values.identity))
      throw new UsageError(
        '--identity must be github:<id>, google:<sub> or oidc:<sub>, the subject 1 to 255 characters without control characters.',
      );
    // GitHub sign-in finds the user by the numeric account id; a login (github:octocat) would never match,
    // and that person's first sign-in would make a separate user.
    if (values.identity?.startsWith('github:') && !/^github:\d{1,20}$/.test(values.identity))
      throw new UsageError(
        '--identity github:<id> takes the numeric GitHub user id (https://api.github.com/users/<login> shows it as "id"), not the login.',
      );
  }
  if (command === 'create-org') {
    handleOf(values.handle, 'handle');
    handleOf(values.admin, 'admin');
  }
  let scopes: Scope[] = [...ALL_SCOPES];
  let days: number = TOKEN_LIMITS.defaultLifetimeDays;
  if (command === 'create-token') {
    handleOf(values.user, 'user');
    if (values.account) handleOf(values.account, 'account');
    // Its length was checked above, with the other names.
    if (values.name === undefined)
      throw new UsageError(`--name is required (1 to ${TOKEN_LIMITS.nameMaxLength} characters).`);
    // Given but empty (`--scopes "$SCOPES"` with the variable unset) is a mistake, never every scope.
    if (values.scopes !== undefined && values.scopes !== 'all') {
      const listed = values.scopes
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (listed.length === 0)
        throw new UsageError('--scopes names no scope: list them (project:read,glossary:read) or give all.');
      const unknown = listed.filter((s) => !isScope(s));
      if (unknown.length > 0) throw new UsageError(`Unknown scopes: ${unknown.join(', ')}.`);
      scopes = listed as Scope[];
    }
    if (values.days !== undefined) {
      // Decimal digits only: Number() would read `0x10` as 16 and ` 7` as 7.
      days = /^\d+$/.test(values.days) ? Number(values.days) : Number.NaN;
      if (
        !Number.isInteger(days) ||
        days < TOKEN_LIMITS.minLifetimeDays ||
        days > TOKEN_LIMITS.maxLifetimeDays
      )
        throw new UsageError(
          `--days must be a whole number from ${TOKEN_LIMITS.minLifetimeDays} to ${TOKEN_LIMITS.maxLifetimeDays}.`,
        );
    }
  }

  const { databaseUrl } = loadAdminConfig(env);
  const orm = await connectDatabase(databaseUrl);
  try {
    // Reported as `npm run migrate` reports it (every command migrates; `migrate` also says when nothing was to do).
    const applied = await migrateDatabase(orm);
    if (applied.length > 0 || command === 'migrate') out(migrationReport(applied));
    if (command === 'migrate') return;
    const em = orm.em.fork();
    try {
      if (command === 'create-user') {
        const { user, account } = createUserWithAccount(em, {
          handle: values.handle!,
          displayName: values.name ?? values.handle!,
          email: asciiEmail(values.email!),
        });
        // In the new person's own log, with them as the actor: the command acts for them, and an event
        // without an actor would read as one whose person was deleted.
        auditCli(em, user.id, {
          action: 'user.create',
          resourceType: 'user',
          resourceId: user.id,
          account,
          details: { handle: account.handle },
        });
        if (values.identity) {
          const at = values.identity.indexOf(':');
          const identity = em.create(Identity, {
            user,
            provider: values.identity.slice(0, at),
            subject: values.identity.slice(at + 1),
            email: null,
            emailVerified: false,
          });
          // As a signed-in person adding a way to sign in is recorded (src/identity/people.ts).
          auditCli(em, user.id, {
            action: 'identity.link',
            resourceType: 'identity',
            resourceId: identity.id,
            account,
            details: { provider: identity.provider },
          });
        }
        await em.flush();
        out(`Created user "${values.handle}" (${user.id}).`);
      } else if (command === 'create-org') {
        const { userId } = await userByHandle(orm, values.admin!);
        const creator = await em.findOneOrFail(User, userId);
        const { organization, account } = createOrganization(em, creator, {
          handle: values.handle!,
          displayName: values.name ?? values.handle!,
        });
        // As POST /organizations records it, with the admin as the actor.
        auditCli(em, userId, {
          action: 'organization.create',
          resourceType: 'organization',
          resourceId: organization.id,
          account,
          details: { handle: account.handle, visibility: account.visibility },
        });
        await em.flush();
        out(`Created organization "${values.handle}" with "${values.admin}" as its admin.`);
      } else {
        const { userId, account: personal } = await userByHandle(orm, values.user!);
        let account = await em.findOneOrFail(Account, personal.id);
        if (values.account && values.account !== values.user) {
          const target = await em.findOne(Account, { handle: values.account, kind: 'organization' });
          const organization = target ? await em.findOne(Organization, { account: target.id }) : null;
          const admin = organization
            ? await em.findOne(Membership, { organization: organization.id, user: userId, role: 'admin' })
            : null;
          if (!target || !admin)
            throw new UsageError(`"${values.user}" is not an admin of an organization "${values.account}".`);
          account = target;
        }
        const { row, secret } = issueAccountToken(em, {
          account,
          createdById: userId,
          name: values.name!,
          scopes,
          expiresAt: tokenExpiry(days),
        });
        // As POST /accounts/{account}/tokens records it (never the secret), with the token's user as the actor.
        auditCli(em, userId, {
          action: 'token.create',
          resourceType: 'account_token',
          resourceId: row.id,
          account,
          details: {
            name: row.name,
            scopes: row.scopes,
            tokenPrefix: row.tokenPrefix,
            expiresAt: row.expiresAt?.toISOString() ?? null,
          },
        });
        await em.flush();
        out(`Created token "${values.name}" for "${account.handle}" (expires in ${days} days). Shown once:`);
        out(secret);
      }
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException)
        throw new UsageError(
          `Already taken: ${/Key \(([^)]+)\)/.exec(String(error))?.[1] ?? 'a unique value'} exists.`,
        );
      if ((error as { code?: string }).code === '23514')
        throw new UsageError('The database refused a value as invalid.');
      throw error;
    }
  } finally {
    await orm.close(true);
  }
}

try {
  await run(process.argv.slice(2), process.env, (line) => console.log(line));
} catch (error) {
  if (error instanceof UsageError || error instanceof ConfigError) {
    console.error(`admin: ${error.message}`);
    if (error instanceof UsageError && !error.message.startsWith('Unknown scopes'))
      console.error('Run `npm run admin -- help` for usage.');
    process.exitCode = 2;
  } else {
    console.error('admin: failed:', (error as Error).message);
    process.exitCode = 1;
  }
}
