// The setup most suites share, said once: a service of their own, a database client on its database, and
// users. Each `use…` registers its beforeAll and afterAll (vitest runs the afterAll hooks in reverse, so what
// started last stops first) and returns a handle that stands for the real object once beforeAll has made it:
//
//   const service = useService();
//   const db = useDatabaseClient(service);
//   const { ada, bob } = useUsers(service, 'ada', 'bob');
//
// The handles are used exactly like the objects (service.url, db.query(…), ada.client); touching one
// before its beforeAll ran (at a file's top level) throws and says so.
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createTestUser, type TestUser } from './fixtures.ts';
import { startTestService, type TestService } from './service.ts';

/** A stand-in for an object made later (in beforeAll): every use is passed on to the real one. */
export function lateBound<T extends object>(what: string): { handle: T; bind(value: T): void } {
  let target: T | undefined;
  const real = (): T => {
    if (!target) throw new Error(`${what} is used before its beforeAll has set it up`);
    return target;
  };
  const handle = new Proxy({} as T, {
    get(_, key) {
      const object = real();
      const value = Reflect.get(object, key, object);
      // Methods run on the real object (class methods read private state through `this`).
      return typeof value === 'function' ? value.bind(object) : value;
    },
    set: (_, key, value) => Reflect.set(real(), key, value),
    has: (_, key) => Reflect.has(real(), key),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor(_, key) {
      const descriptor = Reflect.getOwnPropertyDescriptor(real(), key);
      return descriptor && { ...descriptor, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
  return { handle, bind: (value) => (target = value) };
}

/** The real service on a loopback port with its own database, for the whole file; `start` picks how. */
export function useService(start: () => Promise<TestService> = () => startTestService()): TestService {
  const service = lateBound<TestService>('the test service');
  let started: TestService | undefined;
  beforeAll(async () => {
    started = await start();
    service.bind(started);
  });
  afterAll(() => started?.close());
  return service.handle;
}

/** A plain `pg` client on the service's database, for what a test checks or arranges behind the API. */
export function useDatabaseClient(service: TestService): pg.Client {
  const db = lateBound<pg.Client>('the database client');
  let client: pg.Client | undefined;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: service.database.url });
    await client.connect();
    db.bind(client);
  });
  afterAll(() => client?.end());
  return db.handle;
}

/** Users signed up with a personal account token each, made in the order given. */
export function useUsers<const H extends string>(
  service: TestService,
  ...handles: H[]
): { [K in H]: TestUser } {
  const users = handles.map((handle) => [handle, lateBound<TestUser>(`the user ${handle}`)] as const);
  beforeAll(async () => {
    for (const [handle, user] of users) user.bind(await createTestUser(service, handle));
  });
  return Object.fromEntries(users.map(([handle, user]) => [handle, user.handle])) as { [K in H]: TestUser };
}
