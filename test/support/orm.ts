import { afterAll, beforeAll } from 'vitest';
import { type Orm, openDatabase } from '../../src/db/orm.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

/** A migrated ORM on a fresh database for the suite that calls it, dropped after the suite. */
export function useTestOrm(): { orm: () => Orm; database: () => TestDatabase } {
  let orm: Orm | undefined;
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    orm = await openDatabase(database.url);
  });
  afterAll(async () => {
    await orm?.close(true);
    await database?.drop();
  });
  return { orm: () => orm!, database: () => database! };
}
