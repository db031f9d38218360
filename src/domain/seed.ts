import type { Logger } from 'pino';
import { ALL_SCOPES } from '../authz/scopes.ts';
import { GlossaryEntry, GlossaryVersion, Project, User, VoiceVersion } from '../db/entities/index.ts';
import type { Orm } from '../db/orm.ts';
import { createOrganization } from './organizations.ts';
import { issueAccountToken } from './tokens.ts';
import { createUserWithAccount } from './users.ts';

/**
 * A newcomer's first start shows something: one user, one organization with a project, voice and glossary,
 * and an account token for the demo user so the API can be tried at once. Returns that token (its secret
 * exists only in the return value), or undefined when the database was not empty.
 */
export async function seedDemoIfEmpty(orm: Orm, logger?: Logger): Promise<string | undefined> {
  const em = orm.em.fork();
  if ((await em.count(User)) > 0) return undefined;
  const token = await em.transactional(async (tx) => {
    // Instances started together on an empty database each found no user; the first to take this lock
    // seeds, and the others find its user once they hold it (one used to fail to start on the handle).
    await tx.execute(SEED_LOCK, [], 'run');
    if ((await tx.count(User)) > 0) return undefined;
    const { user, account: personal } = createUserWithAccount(tx, {
      handle: 'demo',
      displayName: 'Demo User',
      email: 'demo@example.com',
    });
    const { account } = createOrganization(tx, user, {
      handle: 'acme',
      displayName: 'Acme Inc.',
      visibility: 'public',
    });
    tx.create(Project, {
      account,
      handle: 'website',
      name: 'Website',
      description: 'Marketing site strings',
      sourceLocale: 'en',
      targetLocales: ['de', 'fr', 'ja'],
    });
    tx.create(VoiceVersion, {
      account,
      version: 1,
      tone: 'Friendly and confident',
      formality: 'neutral',
      targetAudience: 'Small-business owners',
      guidelines: '- Prefer short sentences.\n- Address the reader directly.',
      targetCountries: ['DE', 'FR', 'JP'],
      changeNote: 'Demo voice',
      author: user,
    });
    const glossary = tx.create(GlossaryVersion, {
      account,
      version: 1,
      changeNote: 'Demo glossary',
      author: user,
    });
    tx.create(GlossaryEntry, {
      glossaryVersion: glossary,
      position: 0,
      term: 'Acme',
      definition: 'Our company name',
      doNotTranslate: true,
      translations: {},
    });
    tx.create(GlossaryEntry, {
      glossaryVersion: glossary,
      position: 1,
      term: 'dashboard',
      definition: 'The main screen after sign-in',
      translations: { de: 'Dashboard', fr: 'tableau de bord', ja: 'ダッシュボード' },
    });
    return issueAccountToken(tx, {
      account: personal,
      createdById: user.id,
      name: 'demo',
      description: 'Created by the demo seed on the first start',
      scopes: ALL_SCOPES,
      expiresAt: new Date(Date.now() + 30 * 24 * 3600 * 1000),
    }).secret;
  });
  if (token === undefined) return undefined;
  logger?.info('created the demo data (user "demo", organization "acme"); SEED_DEMO=false turns this off');
  return token;
}

const SEED_LOCK = `select pg_advisory_xact_lock(hashtext('localization-service:demo-seed'))`;
