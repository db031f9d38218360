// Cells of a CSV we hand out that a spreadsheet would run as a formula (CSV injection, OWASP): a glossary
// term such as =HYPERLINK(...) is text to us, but Excel, LibreOffice or Numbers evaluate it when an admin
// opens the export. The OWASP advice is a leading ' (a spreadsheet shows it as text). csv-stringify's
// escape_formulas does that, but it is one-way: a term that really starts with '= would come back
// without its quote. So export and import share the rule here, and import undoes exactly what export
// did: export adds one ' to a cell that starts with any number of 's and then a formula character, and
// import takes one ' off such a cell, so every cell comes back as it was written.
//
// Formula characters: = + - @, tab and carriage return, and the full-width = + - @ (U+FF1D, U+FF0B,
// U+FF0D, U+FF20), which Apple Numbers reads as the ASCII ones (csv-stringify's list, for the same reason).
const FORMULA = '[=+\\-@\\t\\r\\uFF1D\\uFF0B\\uFF0D\\uFF20]';
const NEEDS_QUOTE = new RegExp(`^'*${FORMULA}`);
const QUOTED = new RegExp(`^'+${FORMULA}`);

/** A cell as the export writes it: text a spreadsheet will not evaluate. */
export const quoteFormula = (cell: string): string => (NEEDS_QUOTE.test(cell) ? `'${cell}` : cell);

/** A cell of an imported CSV as it was before quoteFormula. */
export const unquoteFormula = (cell: string): string => (QUOTED.test(cell) ? cell.slice(1) : cell);
