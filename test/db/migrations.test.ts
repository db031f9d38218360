import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ReferenceKind } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.ts';
import { connectDatabase, migrateDatabase, openDatabase } from '../../src/db/orm.ts';
import { seedDemoIfEmpty } from '../../src/domain/seed.ts';
import { createTestDatabase } from '../support/database.ts';
import { useTestOrm } from '../support/orm.ts';
import { freePort } from '../support/ports.ts';

// The schema is hand-written SQL and the entities are hand-written TypeScript; nothing else ties them.
// This compares what MikroORM would read and write with what the migrations actually created.
describe('entities against the migrated schema', () => {
  const t = useTestOrm();

  // PostgreSQL data_type families each entity property type may map onto.
  const FAMILIES: Record<string, string[]> = {
    string: ['text', 'character varying', 'uuid', 'citext'],
    uuid: ['uuid'],
    number: ['integer', 'bigint', 'smallint', 'numeric', 'double precision', 'real'],
    integer: ['integer', 'bigint', 'smallint'],
    boolean: ['boolean'],
    Date: ['timestamp with time zone'],
    datetime: ['timestamp with time zone'],
    json: ['jsonb', 'json'],
    Buffer: ['bytea'],
    blob: ['bytea'],
    array: ['ARRAY'],
  };

  it('maps every column of every table, with the same nullability and a compatible type', async () => {
    const orm = t.orm();
    const columns = await orm.em
      .getConnection()
      .execute<{ table_name: string; column_name: string; is_nullable: 'YES' | 'NO'; data_type: string }[]>(
        `select table_name, column_name, is_nullable, data_type from information_schema.columns
        where table_schema = 'public'
          -- MikroORM's own bookkeeping, and the credential epoch, which only triggers write and raw SQL reads
          and table_name not in ('mikro_orm_migrations', 'credential_epoch')`,
      );
    const inDatabase = new Map(columns.map((c) => [`${c.table_name}.${c.column_name}`, c]));
    const problems: string[] = [];
    const mapped = new Set<string>();
    const metas = [...orm.getMetadata().getAll().values()].filter((m) => !m.virtual && !m.embeddable);
    expect(metas.length).toBeGreaterThan(10);
    for (const meta of metas) {
      for (const prop of meta.props) {
        if (prop.persist === false) continue;
        if (prop.kind === ReferenceKind.ONE_TO_MANY || prop.kind === ReferenceKind.MANY_TO_MANY) continue;
        if (prop.kind === ReferenceKind.ONE_TO_ONE && !prop.owner) continue;
        for (const field of prop.fieldNames) {
          const key = `${meta.tableName}.${field}`;
          mapped.add(key);
          const column = inDatabase.get(key);
          if (!column) {
            problems.push(`${meta.className}.${prop.name}: no column ${key}`);
            continue;
          }
          const nullable = column.is_nullable === 'YES';
          if (Boolean(prop.nullable) !== nullable) {
            problems.push(
              `${meta.className}.${prop.name}: entity says ${prop.nullable ? 'nullable' : 'not null'}, ${key} is ${nullable ? 'nullable' : 'not null'}`,
            );
          }
          const type = prop.kind === ReferenceKind.SCALAR ? typeFamily(prop.runtimeType, prop.type) : 'uuid';
          const allowed = FAMILIES[type];
          if (!allowed) problems.push(`${meta.className}.${prop.name}: unknown entity type ${type}`);
          else if (!allowed.includes(column.data_type)) {
            problems.push(
              `${meta.className}.${prop.name}: ${type} entity property on a ${column.data_type} column`,
            );
          }
        }
      }
    }
    for (const key of inDatabase.keys()) {
      if (!mapped.has(key)) problems.push(`column ${key} is mapped by no entity`);
    }
    expect(problems).toEqual([]);
  });

  function typeFamily(runtimeType: string | undefined, type: string | undefined): string {
    const t = (type ?? '').toLowerCase();
    if (t === 'json' || t.endsWith('jsontype')) return 'json';
    if (t === 'uuid') return 'uuid';
    if (t.endsWith('[]') || t === 'array' || t.endsWith('arraytype') || runtimeType?.endsWith('[]'))
      return 'array';
    if (t === 'blob' || t === 'buffer' || runtimeType === 'Buffer') return 'Buffer';
    if (t === 'datetime' || runtimeType === 'Date') return 'Date';
    if (t === 'integer' || t === 'smallint' || t === 'bigint') return 'integer';
    return runtimeType ?? t;
  }
});

describe('the demo seed from several instances at once', () => {
  it('seeds an empty database once: one instance creates the demo, the others find it and start', async () => {
    const database = await createTestDatabase();
    const orms = await Promise.all([1, 2, 3].map(() => connectDatabase(database.url)));
    try {
      await migrateDatabase(orms[0]!);
      // Each found no user and then created "demo": all but one failed to start on the taken handle.
      const tokens = await Promise.all(orms.map((orm) => seedDemoIfEmpty(orm)));
      expect(tokens.filter((token) => token !== undefined)).toHaveLength(1);
      const users = await orms[0]!.em.getConnection().execute('select count(*)::int as n from users');
      expect(users).toEqual([{ n: 1 }]);
    } finally {
      await Promise.all(orms.map((orm) => orm.close(true)));
      await database.drop();
    }
  });
});

describe('migrations from several instances at once', () => {
  it('applies each migration exactly once when four instances migrate an empty database together', async () => {
    const database = await createTestDatabase();
    const orms = await Promise.all([1, 2, 3, 4].map(() => connectDatabase(database.url)));
    try {
      const applied = await Promise.all(orms.map((orm) => migrateDatabase(orm)));
      // One of them did all the work; the others waited on the lock and found nothing pending.
      expect(applied.flat().sort()).toEqual(migrations.map((m) => m.name).sort());
      expect(applied.filter((names) => names.length > 0)).toHaveLength(1);
      const rows = await orms[0]!.em
        .getConnection()
        .execute<{ name: string }[]>('select name from mikro_orm_migrations order by id');
      expect(rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name));
      // And every instance now sees a current schema.
      for (const orm of orms) expect(await orm.migrator.getPending()).toEqual([]);
    } finally {
      await Promise.all(orms.map((orm) => orm.close(true)));
      await database.drop();
    }
  });

  it('names DATABASE_URL and the server it tried when it cannot connect, and never the password', async () => {
    const port = await freePort(); // nothing listens there
    const refused = await openDatabase(`postgresql://postgres:s3cret-pw@127.0.0.1:${port}/somewhere`).catch(
      (error: Error) => error,
    );
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^could not use the database server named in DATABASE_URL \\(127\\.0\\.0\\.1:${port}, database "somewhere"\\)`,
      ),
    );
    expect((refused as Error).message).toContain('ECONNREFUSED');
    expect((refused as Error).message).not.toContain('s3cret-pw');
    // A socket directory instead of a host.
    const socket = await openDatabase('postgresql:///somewhere?host=/nonexistent').catch(
      (error: Error) => error,
    );
    expect((socket as Error).message).toMatch(
      /^could not use the database server named in DATABASE_URL \(\/nonexistent, /,
    );
  });

  it('refuses a DATABASE_URL whose database does not exist instead of creating an empty one', async () => {
    const database = await createTestDatabase();
    const missing = new URL(database.url);
    missing.pathname = `/${missing.pathname.slice(1)}_typo`;
    try {
      await expect(openDatabase(missing.href)).rejects.toThrow(
        new RegExp(`database "${missing.pathname.slice(1)}" named in DATABASE_URL does not exist`),
      );
      const orm = await connectDatabase(database.url);
      try {
        const [row] = await orm.em
          .getConnection()
          .execute<{ n: number }[]>('select count(*)::int as n from pg_database where datname = ?', [
            missing.pathname.slice(1),
          ]);
        expect(row!.n).toBe(0);
      } finally {
        await orm.close(true);
      }
    } finally {
      await database.drop();
    }
  });

  it('refuses a database that does not store text as UTF-8, naming the encoding', async () => {
    const database = await createTestDatabase();
    const ascii = new URL(database.url);
    ascii.pathname = `/${ascii.pathname.slice(1)}_ascii`;
    const name = ascii.pathname.slice(1);
    const admin = await connectDatabase(database.url);
    try {
      await admin.em
        .getConnection()
        .execute(
          `create database ${name} encoding 'SQL_ASCII' template template0 locale_provider libc locale 'C'`,
        );
      await expect(openDatabase(ascii.href)).rejects.toThrow(
        new RegExp(`database "${name}" stores text as SQL_ASCII, and the service needs UTF8`),
      );
    } finally {
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      await admin.close(true);
      await database.drop();
    }
  });

  it('with migrating at start turned off, refuses a schema that is behind and names what is pending', async () => {
    const database = await createTestDatabase();
    try {
      await expect(openDatabase(database.url, undefined, { migrate: false })).rejects.toThrow(
        /schema is behind.*Migration20261122000000_initial.*npm run migrate/,
      );
      const orm = await openDatabase(database.url);
      await orm.close(true);
      const again = await openDatabase(database.url, undefined, { migrate: false });
      await again.close(true);
    } finally {
      await database.drop();
    }
  });

  it('`npm run migrate` migrates DATABASE_URL and exits, and says so; without DATABASE_URL it names the problem', async () => {
    const run = (env: Record<string, string>) =>
      promisify(execFile)(process.execPath, ['src/migrate.ts'], {
        cwd: join(import.meta.dirname, '..', '..'),
        env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', ...env },
      });
    const database = await createTestDatabase();
    try {
      const first = await run({ DATABASE_URL: database.url });
      expect(first.stdout).toContain(`Applied: ${migrations.map((m) => m.name).join(', ')}`);
      const second = await run({ DATABASE_URL: database.url });
      expect(second.stdout).toContain('The schema is up to date.');
      const orm = await openDatabase(database.url, undefined, { migrate: false });
      await orm.close(true);
    } finally {
      await database.drop();
    }
    await expect(run({})).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('DATABASE_URL must be set'),
    });
  });
});

describe('the migration of e-mail domains to ASCII', () => {
  it('rewrites the Unicode domain of stored e-mails, the local part and every other address as they were', async () => {
    const database = await createTestDatabase();
    const orm = await connectDatabase(database.url);
    try {
      const before = migrations.findIndex((m) => m.name === 'Migration20261127140000_ascii_email_domains');
      await orm.migrator.up({ to: migrations[before - 1]!.name });
      const db = orm.em.getConnection();
      await db.execute(
        `insert into users (id, display_name, email) values
           ('01900000-0000-7000-8000-000000000001', 'Uma', 'uma@bücher.example'),
           ('01900000-0000-7000-8000-000000000002', 'Ann', 'ann@example.com'),
           ('01900000-0000-7000-8000-000000000003', 'Üla', 'üla@xn--bcher-kva.example')`,
      );
      await db.execute(
        `insert into identities (id, user_id, provider, subject, email, email_verified) values
           ('01900000-0000-7000-8000-000000000011', '01900000-0000-7000-8000-000000000001', 'github', '1', 'uma@bücher.example', true),
           ('01900000-0000-7000-8000-000000000012', '01900000-0000-7000-8000-000000000002', 'github', '2', null, false)`,
      );
      await orm.migrator.up();
      expect(await db.execute('select email from users order by id')).toEqual([
        { email: 'uma@xn--bcher-kva.example' },
        { email: 'ann@example.com' },
        { email: 'üla@xn--bcher-kva.example' },
      ]);
      expect(await db.execute('select email, email_verified from identities order by id')).toEqual([
        { email: 'uma@xn--bcher-kva.example', email_verified: true },
        { email: null, email_verified: false },
      ]);
    } finally {
      await orm.close();
      await database.drop();
    }
  });
});
