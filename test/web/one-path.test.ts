// The web pages act only through the operation pipeline: nothing under src/web writes to the database,
// records audit events or issues tokens itself (the tour in pages.test.ts shows the pipeline doing it,
// with door "web"). A page that grows its own write path fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const WEB = join(import.meta.dirname, '..', '..', 'src', 'web');
const sources = (readdirSync(WEB, { recursive: true }) as string[])
  .filter((file) => file.endsWith('.ts'))
  .map((file) => ({ file, text: readFileSync(join(WEB, file), 'utf8') }));

describe('src/web', () => {
  it('has page modules to check', () => {
    expect(sources.map((s) => s.file)).toEqual(
      expect.arrayContaining(['door.ts', join('pages', 'settings.ts')]),
    );
  });

  it.each([
    ['records audit events', /recordAudit|domain\/audit/],
    ['issues account tokens', /issueAccountToken|tokenExpiry/],
    ['writes through the ORM', /\.(flush|persist|persistAndFlush|nativeUpdate|nativeDelete|remove)\(/],
    ['runs SQL', /getConnection\(|createQueryBuilder|\.raw\(/],
  ])('never %s itself', (_what, pattern) => {
    expect(sources.filter((s) => pattern.test(s.text)).map((s) => s.file)).toEqual([]);
  });
});
