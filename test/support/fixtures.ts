import { type Client, createClient } from '../../generated/sdk/client/index.ts';
import { ALL_SCOPES, type Scope } from '../../src/authz/scopes.ts';
import { Identity, Membership, User } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { createOrganization } from '../../src/domain/organizations.ts';
import { issueAccountToken } from '../../src/domain/tokens.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import type { TestService } from './service.ts';

export interface TestUser {
  userId: string;
  handle: string;
  token: string;
  /** A generated-SDK client that sends this user's token to the service under test. */
  client: Client;
}

/**
 * Signs a user up the way the service does (user + personal account) and gives them a personal account
 * token: the bootstrap credential a real user would create on the web page.
 */
export async function createTestUser(
  service: Pick<TestService, 'url' | 'database'>,
  handle: string,
  scopes: readonly Scope[] = ALL_SCOPES,
): Promise<TestUser> {
  const orm = await openDatabase(service.database.url);
  try {
    const em = orm.em.fork();
    const { user, account } = createUserWithAccount(em, {
      handle,
      displayName: handle,
      email: `${handle}@example.com`,
    });
    // Signed up as through a provider that verified this e-mail (invitations match on it).
    em.create(Identity, {
      user,
      provider: 'github',
      subject: `test-${user.id}`,
      email: `${handle}@example.com`,
      emailVerified: true,
    });
    const { secret } = issueAccountToken(em, {
      account,
      createdById: user.id,
      name: 'test',
      scopes: [...scopes],
    });
    await em.flush();
    return { userId: user.id, handle, token: secret, client: sdkClient(service, secret) };
  } finally {
    await orm.close();
  }
}

/**
 * An organization made the way the service makes one (admin creator, default settings), with extra
 * members, straight in the database: for suites that need organization roles but do not test them.
 */
export async function createTestOrganization(
  service: TestService,
  handle: string,
  admin: TestUser,
  options: { visibility?: 'private' | 'public'; members?: TestUser[] } = {},
): Promise<void> {
  const orm = await openDatabase(service.database.url);
  try {
    const em = orm.em.fork();
    const creator = await em.findOneOrFail(User, { id: admin.userId });
    const { organization } = createOrganization(em, creator, {
      handle,
      displayName: handle,
      visibility: options.visibility ?? 'private',
    });
    for (const member of options.members ?? []) {
      em.create(Membership, { organization, user: member.userId, role: 'member' });
    }
    await em.flush();
  } finally {
    await orm.close();
  }
}

export function sdkClient(service: { url: string }, token?: string): Client {
  return createClient({ baseUrl: service.url, ...(token ? { auth: token } : {}) });
}
