/**
 * What makes two glossary terms the same term: their NFC form. "café" with a precomposed é and with
 * e + U+0301 are one word to a reader (and to the text a translation is checked against), so a glossary
 * holds one of them, and an edit, a removal or a CSV import names an entry in either form. Terms are
 * stored as written.
 */
export const termKey = (term: string): string => term.normalize('NFC');
