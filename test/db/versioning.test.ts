import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { GlossaryEntry, GlossaryVersion, VoiceVersion } from '../../src/db/entities/index.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { useTestOrm } from '../support/orm.ts';

const db = useTestOrm();

describe('versioned voice and glossary', () => {
  it('keeps every voice version; a second save with the same number is refused', async () => {
    const em = db.orm().em.fork();
    const { account, user } = createUserWithAccount(em, { handle: 'voices', displayName: 'V' });
    em.create(VoiceVersion, { account, version: 1, tone: 'warm', author: user });
    em.create(VoiceVersion, { account, version: 2, tone: 'crisp', author: user });
    await em.flush();

    const duplicate = db.orm().em.fork();
    duplicate.create(VoiceVersion, { account: account.id, version: 2, tone: 'lost update' });
    await expect(duplicate.flush()).rejects.toBeInstanceOf(UniqueConstraintViolationException);

    const history = await db
      .orm()
      .em.fork()
      .find(VoiceVersion, { account: account.id }, { orderBy: { version: 'asc' } });
    expect(history.map((v) => [v.version, v.tone])).toEqual([
      [1, 'warm'],
      [2, 'crisp'],
    ]);
  });

  it('keeps each glossary version with its own entries', async () => {
    const em = db.orm().em.fork();
    const { account } = createUserWithAccount(em, { handle: 'glossaries', displayName: 'G' });
    const v1 = em.create(GlossaryVersion, { account, version: 1 });
    em.create(GlossaryEntry, {
      glossaryVersion: v1,
      position: 0,
      term: 'cloud',
      translations: { de: 'Cloud' },
    });
    const v2 = em.create(GlossaryVersion, { account, version: 2 });
    em.create(GlossaryEntry, {
      glossaryVersion: v2,
      position: 0,
      term: 'cloud',
      translations: { de: 'Wolke' },
    });
    em.create(GlossaryEntry, { glossaryVersion: v2, position: 1, term: 'server', doNotTranslate: true });
    await em.flush();

    const read = db.orm().em.fork();
    const versions = await read.find(
      GlossaryVersion,
      { account: account.id },
      { populate: ['entries'], orderBy: { version: 'asc' } },
    );
    expect(versions.map((v) => v.entries.getItems().map((e) => [e.term, e.translations.de ?? null]))).toEqual(
      [
        [['cloud', 'Cloud']],
        [
          ['cloud', 'Wolke'],
          ['server', null],
        ],
      ],
    );
  });
});
