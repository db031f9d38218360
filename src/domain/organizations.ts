import type { EntityManager } from '@mikro-orm/postgresql';
import {
  Account,
  GlossarySettings,
  type IAccount,
  type IOrganization,
  type IUser,
  Membership,
  Organization,
} from '../db/entities/index.ts';

/** Creates the organization, its account and default settings, with the creator as its first admin. */
export function createOrganization(
  em: EntityManager,
  creator: IUser,
  input: { handle: string; displayName: string; visibility?: 'private' | 'public' },
): { organization: IOrganization; account: IAccount } {
  const account = em.create(Account, {
    kind: 'organization',
    handle: input.handle,
    displayName: input.displayName,
    visibility: input.visibility ?? 'private',
    user: null,
    revision: 1,
  });
  const organization = em.create(Organization, { account, createdBy: creator });
  em.create(Membership, { organization, user: creator, role: 'admin' });
  em.create(GlossarySettings, { account, enforcementMode: 'warn', revision: 1 });
  return { organization, account };
}
