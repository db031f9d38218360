/**
 * What makes two glossary terms the same term: their NFC form. "café" with a precomposed é and with
 * e + U+0301 are one word to a reader (and to the text a translation is checked against), so a glossary
 * holds one of them, and an edit, a removal or a CSV import names an entry in either form. Terms are
 * stored as written.
 */
export const termKey = (term: string): string => term.normalize('NFC');

/** What a glossary entry says: its term, definition, flags and approved translations by locale. */
export interface GlossaryEntryFields {
  term: string;
  definition: string;
  caseSensitive: boolean;
  doNotTranslate: boolean;
  forbidden: boolean;
  translations: Record<string, string>;
}

/**
 * Whether two entries say the same (translations in any order); `stored` undefined: a new term. An edit
 * that changes nothing saves no version, from the pages and the API alike.
 */
export function sameEntry(stored: GlossaryEntryFields | undefined, other: GlossaryEntryFields): boolean {
  if (!stored) return false;
  const translations = (entry: GlossaryEntryFields) =>
    JSON.stringify(Object.entries(entry.translations).sort());
  return (
    stored.term === other.term &&
    stored.definition === other.definition &&
    stored.caseSensitive === other.caseSensitive &&
    stored.doNotTranslate === other.doNotTranslate &&
    stored.forbidden === other.forbidden &&
    translations(stored) === translations(other)
  );
}
