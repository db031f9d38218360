import { CheckConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import {
  Account,
  AccountModel,
  GlossaryEntry,
  GlossaryVersion,
  Invitation,
  Membership,
  Organization,
  Project,
  User,
} from '../../src/db/entities/index.ts';
import { createOrganization } from '../../src/domain/organizations.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { RESERVED_HANDLES } from '../../src/domain/validation.ts';
import { useTestOrm } from '../support/orm.ts';

const db = useTestOrm();

/** Runs `work` in its own transaction and returns the error it fails with. */
async function failure(work: (em: ReturnType<typeof fork>) => void | Promise<void>): Promise<unknown> {
  const em = fork();
  try {
    await em.transactional(async (tx) => {
      await work(tx as never);
    });
  } catch (error) {
    return error;
  }
  throw new Error('expected the transaction to fail');
}
const fork = () => db.orm().em.fork();

async function newUser(handle: string) {
  const em = fork();
  const created = createUserWithAccount(em, { handle, displayName: handle });
  await em.flush();
  return created;
}

/** An organization `handle`, saved, founded by a new user `founder` (its first admin). */
async function newOrganization(founder: string, handle: string) {
  const { user } = await newUser(founder);
  const em = fork();
  const { organization } = createOrganization(em, await em.findOneOrFail(User, user.id), {
    handle,
    displayName: 'Org',
  });
  await em.flush();
  return organization;
}

describe('database constraints', () => {
  it('applies every migration to an empty database and has nothing left to apply', async () => {
    const pending = await db.orm().migrator.getPending();
    expect(pending).toEqual([]);
    const tables = await fork()
      .getConnection()
      .execute<{ table_name: string }[]>(
        `select table_name from information_schema.tables where table_schema = 'public'`,
      );
    const names = tables.map((t) => t.table_name);
    for (const table of [
      'users',
      'accounts',
      'organizations',
      'memberships',
      'invitations',
      'projects',
      'voice_versions',
      'glossary_versions',
      'glossary_entries',
      'glossary_settings',
      'account_models',
      'account_tokens',
      'audit_events',
      'oidc_models',
    ]) {
      expect(names).toContain(table);
    }
  });

  it('refuses a duplicate account handle and keeps the first', async () => {
    await newUser('taken');
    const error = await failure((em) => {
      createUserWithAccount(em, { handle: 'taken', displayName: 'Other' });
    });
    expect(error).toBeInstanceOf(UniqueConstraintViolationException);
    expect(await fork().count(Account, { handle: 'taken' })).toBe(1);
    expect(await fork().count(User, { displayName: 'Other' })).toBe(0);
  });

  it.each(['a', 'Upper', '1digit', 'ends-', 'has_underscore', 'x'.repeat(40)])(
    'refuses the malformed handle %s',
    async (handle) => {
      const error = await failure((em) => {
        createUserWithAccount(em, { handle, displayName: 'x' });
      });
      expect(error).toBeInstanceOf(CheckConstraintViolationException);
    },
  );

  it('refuses every reserved handle the code knows, in the database too', async () => {
    for (const handle of RESERVED_HANDLES) {
      const error = await failure((em) => {
        createUserWithAccount(em, { handle, displayName: 'x' });
      });
      expect(error, handle).toBeInstanceOf(CheckConstraintViolationException);
    }
  });

  it('refuses a project whose locale is not a language tag or repeats the source', async () => {
    const { account } = await newUser('locales');
    for (const [sourceLocale, targetLocales] of [
      ['not a locale', []],
      ['en', ['en']],
    ] as const) {
      const error = await failure((em) => {
        em.create(Project, {
          account: account.id,
          handle: 'p1',
          name: 'P',
          sourceLocale,
          targetLocales: [...targetLocales],
        });
      });
      expect(error).toBeInstanceOf(CheckConstraintViolationException);
    }
    expect(await fork().count(Project, { account: account.id })).toBe(0);
  });

  it('keeps at least one admin in an organization, whether demoted or removed', async () => {
    const organization = await newOrganization('founder', 'org-admins');

    const demoted = await failure(async (tx) => {
      const m = await tx.findOneOrFail(Membership, { organization: organization.id });
      m.role = 'member';
    });
    expect(String(demoted)).toContain('at least one admin');
    const removed = await failure(async (tx) => {
      tx.remove(await tx.findOneOrFail(Membership, { organization: organization.id }));
    });
    expect(String(removed)).toContain('at least one admin');
    const after = await fork().findOneOrFail(Membership, { organization: organization.id });
    expect(after.role).toBe('admin');

    // Deleting the organization itself takes its memberships with it.
    await fork().nativeDelete(Account, { handle: 'org-admins' });
    expect(await fork().count(Organization, { id: organization.id })).toBe(0);
    expect(await fork().count(Membership, { organization: organization.id })).toBe(0);
  });

  it('refuses a second pending invitation for the same e-mail', async () => {
    const organization = await newOrganization('inviter', 'org-invites');
    const em = fork();
    const invite = (tx: typeof em, hash: string) =>
      tx.create(Invitation, {
        organization: organization.id,
        email: 'x@example.com',
        role: 'member',
        tokenHash: Buffer.from(hash.padEnd(32, '0')),
        expiresAt: new Date(Date.now() + 1e6),
      });
    invite(em, 'a');
    await em.flush();
    const error = await failure((tx) => {
      invite(tx as never, 'b');
    });
    expect(error).toBeInstanceOf(UniqueConstraintViolationException);
  });

  it('allows one default model per account', async () => {
    const { account } = await newUser('models');
    const em = fork();
    em.create(AccountModel, {
      account: account.id,
      handle: 'first',
      model: 'openai:gpt-4o',
      isDefault: true,
    });
    await em.flush();
    const error = await failure((tx) => {
      tx.create(AccountModel, {
        account: account.id,
        handle: 'second',
        model: 'anthropic:claude',
        isDefault: true,
      });
    });
    expect(error).toBeInstanceOf(UniqueConstraintViolationException);
    expect(await fork().count(AccountModel, { account: account.id })).toBe(1);
  });

  it('refuses the same term twice in one glossary version', async () => {
    const { account } = await newUser('terms');
    const error = await failure((tx) => {
      const version = tx.create(GlossaryVersion, { account: account.id, version: 1 });
      tx.create(GlossaryEntry, { glossaryVersion: version, position: 0, term: 'cloud' });
      tx.create(GlossaryEntry, { glossaryVersion: version, position: 1, term: 'cloud' });
    });
    expect(error).toBeInstanceOf(UniqueConstraintViolationException);
    expect(await fork().count(GlossaryVersion, { account: account.id })).toBe(0);
  });
});
