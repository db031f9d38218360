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
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startOAuthService } from '../oauth/helpers.ts';
import { hasChromium, launchChromium } from './environment.ts';
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

/** The OAuth suites' service for the file (development sign-in, behind a proxy): a dozen suites start it. */
export function useOAuthService(): TestService {
  return useService(() => startOAuthService());
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

/** Debian's chromium for the file (when the machine has it: browser suites are skipIf(!hasChromium)). */
export function useChromium(): Browser {
  const browser = lateBound<Browser>('chromium');
  let launched: Browser | undefined;
  beforeAll(async () => {
    if (!hasChromium) return;
    launched = await launchChromium();
    browser.bind(launched);
  });
  afterAll(() => launched?.close());
  return browser.handle;
}

/**
 * An agent's temporary callback listener on a random loopback port, as a native app or CLI runs one for
 * the authorization redirect: `uri` to register, `received` the callbacks that arrived (not favicon asks).
 */
export function useLoopbackCallback(): { readonly uri: string; received: URL[] } {
  const received: URL[] = [];
  let uri: string | undefined;
  let listener: Server | undefined;
  beforeAll(async () => {
    listener = createServer((req, res) => {
      const url = new URL(req.url ?? '/', uri);
      if (url.pathname === '/callback') received.push(url);
      res.end('Signed in; you can close this window.');
    });
    listener.listen(0, '127.0.0.1');
    await once(listener, 'listening');
    uri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
  });
  afterAll(() => listener?.close());
  return {
    received,
    get uri() {
      if (!uri) throw new Error('the loopback callback is used before its beforeAll has set it up');
      return uri;
    },
  };
}
