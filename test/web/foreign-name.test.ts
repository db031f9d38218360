import { describe, expect, it } from 'vitest';
import { CLIENT_NAME_MAX_CHARACTERS, foreignName } from '../../src/web/foreign-name.ts';

// A name an app chose for itself, as the consent and connected-apps pages show it.
describe('a foreign name', () => {
  it('loses its bidirectional formatting characters', () => {
    expect(foreignName('Docs helper\u202e tnuocca ruoy\u202c')).toBe('Docs helper tnuocca ruoy');
  });

  it('is shown whole up to the registration limit, and cut with an ellipsis past it', () => {
    const fits = `${'ü'.repeat(CLIENT_NAME_MAX_CHARACTERS - 1)}😀`;
    expect(foreignName(fits)).toBe(fits);
    // A metadata document's name is not held to registration's limit: the page still is.
    const long = 'Localization service (official) — Sign-in required by your administrator. '.repeat(6);
    const shown = foreignName(long);
    expect([...shown]).toHaveLength(CLIENT_NAME_MAX_CHARACTERS + 1);
    expect(shown).toBe(`${[...long].slice(0, CLIENT_NAME_MAX_CHARACTERS).join('')}…`);
  });

  it('is cut where a reader sees a character end, never inside a flag, an emoji family or an accent', () => {
    const a99 = 'a'.repeat(CLIENT_NAME_MAX_CHARACTERS - 1);
    for (const tail of ['👨‍👩‍👧‍👦', '🇫🇷🇩🇪', 'e\u0301x']) {
      expect(foreignName(`${a99}${tail}`), tail).toBe(`${a99}…`);
    }
    // A cluster of many combining marks counts by its code points, not as one character.
    expect([...foreignName(`x${'\u0301'.repeat(500)}`)].length).toBeLessThanOrEqual(1);
  });
});
