// An account's glossary: a table with search and filters, add, edit and remove one entry, CSV import and
// export (csv-parse / csv-stringify), history and a diff of two versions, and the glossary settings.
// The glossary is saved whole (saveGlossary), so every change here is the current version with one
// change applied, saved as a new version with a change note and If-Match on the version it started from.

import { isUtf8 } from 'node:buffer';
import type { RequestHandler, Response, Router } from 'express';
import { MAX_REQUEST_BODY_BYTES } from '../../api/limits.ts';
import type { OperationResponse, Pipeline } from '../../api/pipeline.ts';
import type { Role } from '../../authz/policy.ts';
import { type GlossaryEntryFields, sameEntry, termKey } from '../../domain/glossary-terms.ts';
import { onFirstUse } from '../../lib/on-first-use.ts';
import {
  asShown,
  edited,
  formErrors,
  isOk,
  type Kit,
  multiline,
  newestVersions,
  type PageContext,
  pathOf,
  text,
} from '../kit.ts';
import { boundedWordDiff } from '../word-diff.ts';
import { quoteFormula, unquoteFormula } from './csv-formulas.ts';

const csvParse = onFirstUse<typeof import('csv-parse/sync')>('csv-parse/sync');
const csvStringify = onFirstUse<typeof import('csv-stringify/sync')>('csv-stringify/sync');
const multer = onFirstUse<typeof import('multer')>('multer');

type Entry = GlossaryEntryFields;
interface Glossary {
  version: number;
  etag: string;
  changeNote: string;
  author: string | null;
  createdAt: string;
  entries: Entry[];
}

/** Rows shown at once; search and filters narrow a large glossary down. */
const SHOWN = 100;
/** CSV columns besides one per locale. */
const FIXED = ['term', 'definition', 'caseSensitive', 'doNotTranslate', 'forbidden'] as const;
let multipart: RequestHandler | undefined;

/**
 * Why multer refused an upload, in the person's words: 413 when a limit on size was passed (as the app's
 * body parsers answer), 400 when the body is not the one form with one CSV file that the page sends.
 */
function uploadRefusal(error: unknown): { status: number; detail: string } {
  const oneFile = 'The upload holds more than one file; import one CSV file at a time.';
  const refused = error instanceof multer().MulterError ? error : undefined;
  switch (refused?.code) {
    case 'LIMIT_FILE_SIZE':
      return { status: 413, detail: `The file is larger than ${MAX_UPLOAD_BYTES / 1024 / 1024} MB.` };
    case 'LIMIT_FIELD_COUNT':
    case 'LIMIT_PART_COUNT':
    case 'LIMIT_FIELD_KEY':
    case 'LIMIT_FIELD_VALUE':
      return {
        status: 413,
        detail: 'The upload has more form fields, or longer ones, than the import form.',
      };
    case 'LIMIT_FILE_COUNT':
      return { status: 400, detail: oneFile };
    case 'LIMIT_UNEXPECTED_FILE':
      if (refused.field === 'file') return { status: 400, detail: oneFile };
      return {
        status: 400,
        detail: `The file came in the field "${refused.field}"; the import reads it from the field "file".`,
      };
    default:
      // busboy's own errors (a missing boundary, a body that ends inside a part) and multer's other refusals.
      return { status: 400, detail: 'The upload could not be read: it is not a well-formed multipart form.' };
  }
}

/**
 * A CSV file may be as large as the API's request body: the export of a glossary at the API's limits
 * (5,000 entries with real definitions and translations) must import back. At 2 MB, a typical 5,000-entry
 * glossary's 2.4 MB export was refused.
 */
const MAX_UPLOAD_BYTES = MAX_REQUEST_BODY_BYTES;

/**
 * The upload's parser. A body it refuses is the sender's mistake, not ours: the answer is the pages' error
 * page (HTML, like every other page error) with the reason and a way back to the glossary, and the import
 * handler never runs, so nothing is saved. It is answered here, before kit.action's session and CSRF
 * check, because that check reads its token from the very body that could not be read.
 */
function upload(kit: Kit): RequestHandler {
  return (req, res, next) => {
    multipart ??= multer()({
      storage: multer().memoryStorage(),
      limits: { fileSize: MAX_UPLOAD_BYTES, files: 1, fields: 10 },
    }).single('file');
    const refuse = ({ status, detail }: { status: number; detail: string }) =>
      kit.render(
        res,
        undefined,
        'problem',
        {
          title: status === 413 ? 'Upload too large' : 'Upload not readable',
          detail: `${detail} Nothing was imported.`,
          back: {
            href: pathOf('accounts', String(req.params.account), 'glossary'),
            label: 'Back to the glossary',
          },
        },
        status,
      );
    // multer reads the body as it comes: a Content-Encoding (which no browser sets on an upload) would be
    // read as the bytes of the form, not undone, so it is refused as everywhere else.
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      return refuse({
        status: 415,
        detail: `The upload is sent with the Content-Encoding ${JSON.stringify(encoding)}; send the form as it is.`,
      });
    }
    multipart(req, res, (error: unknown) => (error ? refuse(uploadRefusal(error)) : next()));
  };
}

/**
 * The file as UTF-8 bytes: UTF-8 (with or without a byte-order mark) as it is, UTF-16 with its byte-order
 * mark (a spreadsheet's "Unicode text") converted; undefined for anything else, which a decoder would read
 * with replacement characters, saving text that is not what the file holds.
 */
function utf8Csv(file: Buffer): Buffer | undefined {
  const utf16 =
    file[0] === 0xff && file[1] === 0xfe
      ? 'utf-16le'
      : file[0] === 0xfe && file[1] === 0xff
        ? 'utf-16be'
        : undefined;
  if (!utf16) return isUtf8(file) ? file : undefined;
  try {
    return Buffer.from(new TextDecoder(utf16, { fatal: true }).decode(file.subarray(2)));
  } catch {
    return undefined;
  }
}

const TRUE = /^(true|yes|y|1|x)$/i;
const FALSE = /^(false|no|n|0|)$/i;
/**
 * A flag cell of an imported row: true, yes, y, 1 or x for true, false, no, n, 0 or nothing for false. Any
 * other word ("ja", "ture") would have been read as false without a word, dropping the rule it meant.
 */
function flagOf(value: string | undefined, column: string, line: number): boolean {
  const cell = (value ?? '').trim();
  if (TRUE.test(cell)) return true;
  if (FALSE.test(cell)) return false;
  throw new Error(
    `line ${line} has ${JSON.stringify(cell)} in the ${column} column; write true or false (yes or no, 1 or 0, x or nothing also do)`,
  );
}

/** How many single-character edits turn `a` into `b` (for a column name one or two typos away). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The header's columns, checked before any row is read: every column that is not a fixed one becomes a
 * locale, so a misspelt `forbiden` or a `notes` column was imported as translations into those "locales"
 * (the rule it meant dropped), and a column named twice kept only its last cell. Refused here, naming the
 * column. A new locale's language code has 2 or 3 letters (BCP 47's 4 to 8 letter codes are reserved or
 * registered one by one, and none is in use), which no word of a typo'd column name is likely to be.
 */
const LOCALE_COLUMN = /^[A-Za-z]{2,3}(?:[-_]|$)/;

function checkColumns(columns: string[], knownLocales: ReadonlySet<string>): ReadonlySet<string> {
  const seen = new Set<string>();
  const locales = new Map<string, string>();
  for (const column of columns) {
    // A column with no name (a trailing comma, as spreadsheets write) holds nothing anyone meant.
    if (column === '') continue;
    if (seen.has(column)) throw new Error(`its first line names the column "${column}" twice`);
    seen.add(column);
    if ((FIXED as readonly string[]).includes(column)) continue;
    // Two spellings of one locale (`de`, `DE`): which one's cells were meant? Said once, for the header,
    // not for every row as the save would.
    const locale = canonicalOrSelf(column);
    const other = locales.get(locale);
    if (other !== undefined)
      throw new Error(`its first line names the locale ${locale} twice, as "${other}" and as "${column}"`);
    locales.set(locale, column);
    // `pt_BR` is how some tools write a locale; BCP 47 writes pt-BR. Said for the header, not for every row.
    if (LOCALE_COLUMN.test(column) && column.includes('_'))
      throw new Error(
        `its first line names a column "${column}"; write the locale ${column.replaceAll('_', '-')}`,
      );
    if (LOCALE_COLUMN.test(column)) continue;
    // A locale of another shape the API took (BCP 47 allows language codes of 5 to 8 letters) that the
    // glossary already has: its own export names it, and must import back.
    if (knownLocales.has(column)) continue;
    const meant = FIXED.find((fixed) => editDistance(fixed.toLowerCase(), column.toLowerCase()) <= 2);
    if (meant)
      throw new Error(
        `its first line names a column "${column}": did you mean "${meant}"? Column names are written exactly so`,
      );
    throw new Error(
      `its first line names a column "${column}", which is neither one of ${FIXED.join(', ')} nor a locale (a language code of 2 or 3 letters, such as de or pt-BR)`,
    );
  }
  // The locales the file names, in canonical form (stored translations are keyed so).
  return new Set(locales.keys());
}

/**
 * The entries as CSV: the fixed columns, then one column per locale in use, sorted. A cell a spreadsheet
 * would evaluate gets a leading ' (csv-formulas.ts), which fromCsv takes off again; a cell that starts or
 * ends with whitespace is quoted, since fromCsv trims unquoted cells but keeps what quotes hold.
 */
function toCsv(entries: Entry[]): string {
  const locales = [...new Set(entries.flatMap((e) => Object.keys(e.translations)))].sort();
  return csvStringify().stringify(
    entries.map((e) =>
      [
        e.term,
        e.definition,
        String(e.caseSensitive),
        String(e.doNotTranslate),
        String(e.forbidden),
        ...locales.map((l) => e.translations[l] ?? ''),
      ].map(quoteFormula),
    ),
    { header: true, columns: [...FIXED, ...locales], quoted_match: /^\s|\s$/ },
  );
}

/** Line breaks in a text, as a CSV line count sees them (CRLF is one). */
const lineBreaks = (text: string) => text.match(/\r\n|\r|\n/g)?.length ?? 0;

/**
 * The separator a spreadsheet used: the one a leading `sep=;` line names (Excel writes it, and the line is
 * no header), else a comma, unless the first line has none and has semicolons (Excel and LibreOffice in
 * locales whose decimal mark is a comma) or tabs (Excel's "Unicode Text"). A comma inside a quoted cell of
 * a semicolon file is no separator either way.
 */
function separatorOf(data: Buffer): { delimiter: string; fromLine: number } {
  const first = data
    .subarray(0, 4096)
    .toString()
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/, 1)[0]!;
  const declared = /^sep=(.)\s*$/i.exec(first);
  if (declared) return { delimiter: declared[1]!, fromLine: 2 };
  if (!first.includes(',')) {
    if (first.includes(';')) return { delimiter: ';', fromLine: 1 };
    if (first.includes('\t')) return { delimiter: '\t', fromLine: 1 };
  }
  return { delimiter: ',', fromLine: 1 };
}

/** The columns a file names, and the locales of those that are no fixed column, in canonical form. */
interface FileColumns {
  columns: string[];
  locales: ReadonlySet<string>;
}

/**
 * CSV rows as entries, each with the line of the file it starts on: the fixed columns by name, any other
 * column a locale (empty cells left out). A cell toCsv quoted against formulas loses that one quote, so an
 * export imports back as the same glossary. The line is counted, not the row: a quoted cell with line
 * breaks and a skipped empty line both move the rows after them further down the file.
 */
function fromCsv(
  data: Buffer,
  knownLocales: ReadonlySet<string>,
): { file: FileColumns; rows: { entry: Entry; line: number }[] } {
  const { delimiter, fromLine } = separatorOf(data);
  const parsed = csvParse().parse(data, {
    delimiter,
    from_line: fromLine,
    skip_empty_lines: true,
    // A row a spreadsheet writes as `,,,` after its cells were cleared holds nothing: skipped, as an empty
    // line is (it was refused for an empty term, on a line the person could not see in the spreadsheet).
    skip_records_with_empty_values: true,
    bom: true,
    trim: true,
    info: true,
  }) as unknown as { record: string[]; info: { bytes: number } }[];
  // info.bytes is where a record ends (its line break included): the lines up to there, less those
  // inside its quoted cells, give the line it starts on.
  let read = 0;
  let breaks = 0;
  const records = parsed.map(({ record, info }) => {
    const chunk = data.subarray(read, info.bytes).toString();
    read = info.bytes;
    breaks += lineBreaks(chunk);
    const end = 1 + breaks - (/[\r\n]$/.test(chunk) ? 1 : 0);
    const line = end - record.reduce((n, cell) => n + lineBreaks(cell), 0);
    return { cells: record.map(unquoteFormula), line };
  });
  const [header, ...rows] = records;
  const columns = header?.cells ?? [];
  // A header spelled otherwise (`Term`) or a file split by semicolons has no `term` column: every row would
  // be refused for an empty term, when it is the header that is wrong.
  const meant = columns.find((column) => editDistance(column.toLowerCase(), 'term') <= 1);
  if (header && !columns.includes('term') && meant !== undefined)
    throw new Error(
      `its first line names a column "${meant}": did you mean "term"? Column names are written exactly so`,
    );
  if (header && !columns.includes('term'))
    throw new Error(
      `its first line names no "term" column (it names ${columns.map((c) => JSON.stringify(c)).join(', ')}); ` +
        `the columns are ${FIXED.join(', ')} and one per locale, separated by commas`,
    );
  const locales = checkColumns(columns, knownLocales);
  const entries = rows.map(({ cells, line }) => {
    // A column with no name is left out when it is empty (a spreadsheet's trailing comma); a cell of it
    // that holds something was meant for a column someone forgot to name, and is not dropped unsaid.
    const unnamed = columns.findIndex((column, i) => column === '' && (cells[i] ?? '') !== '');
    if (unnamed >= 0)
      throw new Error(
        `line ${line} has ${JSON.stringify(cells[unnamed])} in column ${unnamed + 1}, which the first line does not name; name it (a locale) or leave it empty`,
      );
    const row: Record<string, string> = Object.fromEntries(
      columns.flatMap((column, i) => (column === '' ? [] : [[column, cells[i] ?? '']])),
    );
    return {
      line,
      entry: {
        term: row.term ?? '',
        definition: row.definition ?? '',
        caseSensitive: flagOf(row.caseSensitive, 'caseSensitive', line),
        doNotTranslate: flagOf(row.doNotTranslate, 'doNotTranslate', line),
        forbidden: flagOf(row.forbidden, 'forbidden', line),
        // Keyed as the glossary stores locales (`DE` is de), so that an unchanged row compares equal.
        translations: Object.fromEntries(
          Object.entries(row)
            .filter(([column, value]) => !(FIXED as readonly string[]).includes(column) && value !== '')
            .map(([column, value]) => [canonicalOrSelf(column), value]),
        ),
      },
    };
  });
  return { file: { columns: columns.filter((column) => column !== ''), locales }, rows: entries };
}

/**
 * The entry a CSV row makes of the stored one with its term: the columns the file has set what they hold
 * (an empty definition or locale cell clears it), and what the file has no column for is kept. A file of
 * `term,de` updates the German translations and leaves definitions, flags and other locales alone; it used
 * to replace each entry whole, and a translator's one-language file wiped the rest of every entry it named.
 */
function mergeRow(stored: Entry | undefined, row: Entry, file: FileColumns): Entry {
  if (!stored) return row;
  const has = (column: string) => file.columns.includes(column);
  return {
    term: row.term,
    definition: has('definition') ? row.definition : stored.definition,
    caseSensitive: has('caseSensitive') ? row.caseSensitive : stored.caseSensitive,
    doNotTranslate: has('doNotTranslate') ? row.doNotTranslate : stored.doNotTranslate,
    forbidden: has('forbidden') ? row.forbidden : stored.forbidden,
    translations: {
      ...Object.fromEntries(
        Object.entries(stored.translations).filter(([locale]) => !file.locales.has(canonicalOrSelf(locale))),
      ),
      ...row.translations,
    },
  };
}

function canonicalOrSelf(locale: string): string {
  try {
    return Intl.getCanonicalLocales(locale)[0] ?? locale;
  } catch {
    return locale;
  }
}

/**
 * "de = Arbeitsbereich" lines ↔ translations. A translation with line breaks goes on over lines indented by
 * two spaces (the form says so), so a line that is not indented is always a "locale = translation" of its
 * own, and a mistyped one ("not a locale = x") is still told as such.
 */
const CONTINUATION = '  ';
const translationsText = (t: Record<string, string>) =>
  Object.entries(t)
    .map(([locale, value]) => `${locale} = ${asShown(value).replaceAll('\n', `\n${CONTINUATION}`)}`)
    .join('\n');
/**
 * The translations the form's text holds. `stored` is the entry as saved: a translation whose text the
 * person left as it was (the same once the spaces around it are set aside, and its line breaks read as the
 * page showed them) keeps its saved text exactly, so an edit of the definition does not trim a translation's
 * own leading or trailing whitespace, nor turn its CRLF into LF.
 */
function parseTranslations(value: string, stored: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  let current: string | undefined;
  for (const line of value.split(/\r?\n/)) {
    if (current !== undefined && (line.startsWith(CONTINUATION) || line === '')) {
      out[current] += `\n${line.slice(CONTINUATION.length)}`;
      continue;
    }
    const at = line.indexOf('=');
    current = at > 0 ? line.slice(0, at).trim() : line.trim() || undefined;
    if (current !== undefined) out[current] = at > 0 ? line.slice(at + 1).replace(/^[ \t]/, '') : '';
  }
  for (const [locale, text] of Object.entries(out)) {
    const kept = stored[locale];
    out[locale] = kept !== undefined && asShown(kept).trim() === text.trim() ? kept : text.trim();
  }
  return out;
}

/**
 * Why the form's translations cannot be read, naming the line, or undefined: a line that is neither
 * "locale = translation" nor an indented continuation (read as a locale with no translation, it was told
 * only "Fill this in." on a field that was filled).
 */
function translationsProblem(value: string): string | undefined {
  let inTranslation = false;
  for (const [index, line] of value.split(/\r?\n/).entries()) {
    if (inTranslation && (line.startsWith(CONTINUATION) || line === '')) continue;
    if (line.trim() === '') continue;
    if (line.indexOf('=') <= 0)
      return `Line ${index + 1} is not "locale = translation" (such as de = Arbeitsbereich); indent a line that goes on the translation above it by two spaces.`;
    inTranslation = true;
  }
  return undefined;
}

const entryText = (e: Entry | undefined) =>
  e
    ? [
        e.definition,
        [
          e.caseSensitive && 'case-sensitive',
          e.doNotTranslate && 'do not translate',
          e.forbidden && 'forbidden',
        ]
          .filter(Boolean)
          .join(', '),
        translationsText(e.translations),
      ]
        .filter(Boolean)
        .join('\n')
    : '';

export function glossaryPages(router: Router, kit: Kit, pipeline: Pipeline): void {
  const base = (account: string) => pathOf('accounts', account, 'glossary');
  const crumbs = (account: string, last: { label: string; href?: string }[]) => [
    { href: '/dashboard', label: 'Dashboard' },
    { href: pathOf('accounts', account), label: `@${account}` },
    ...last,
  ];

  async function load(pc: PageContext, account: string, version?: string) {
    const r = await pc.call('getGlossary', { params: { account }, query: version ? { version } : {} });
    if (r.status === 404 && !version) return { glossary: undefined };
    return isOk(r) ? { glossary: r.body as Glossary } : { failed: r };
  }

  /**
   * The person's role on the account and its current glossary (undefined: nothing saved yet). The account
   * comes first: a 404 from getGlossary means "nothing saved yet" only on an account one can see; for one
   * that does not exist or that the person may not see, the account's own 404 is the answer.
   */
  async function loadOnAccount(pc: PageContext, account: string) {
    const acc = await pc.call('getAccount', { params: { account } });
    if (!isOk(acc)) return { failed: acc };
    const role = (acc.body as { role: Role | null }).role;
    const r = await pc.call('getGlossary', { params: { account } });
    if (isOk(r)) return { role, glossary: r.body as Glossary };
    // Nor for someone who sees the account but may not read its glossary (anyone, on a public
    // organization): for them the 404 is the refusal, shown as such, not an empty glossary to read.
    if (r.status === 404 && pipeline.allows(role, 'glossary:read')) return { role, glossary: undefined };
    return { failed: r };
  }

  async function roleOn(pc: PageContext, account: string): Promise<Role | null> {
    const r = await pc.call('getAccount', { params: { account } });
    return isOk(r) ? (r.body as { role: Role | null }).role : null;
  }

  interface Extra {
    status?: number;
    entry?: object;
    importForm?: object;
    notice?: string;
  }

  async function glossaryPage(
    res: Response,
    pc: PageContext,
    account: string,
    query: Record<string, unknown>,
    extra: Extra = {},
  ) {
    const loaded = await loadOnAccount(pc, account);
    if (loaded.failed) return kit.problemPage(res, pc, loaded.failed);
    const { role, glossary } = loaded;
    const entries = glossary?.entries ?? [];
    // In one Unicode form, as terms are compared everywhere (termKey): "Café" typed on a Mac is decomposed.
    const folded = (text: string) => termKey(text).toLowerCase();
    const q = typeof query.q === 'string' ? folded(query.q.trim()) : '';
    const locale = typeof query.locale === 'string' ? query.locale.trim() : '';
    const flag = typeof query.flag === 'string' ? query.flag : '';
    const matches = entries.filter(
      (e) =>
        (q === '' || folded(e.term).includes(q) || folded(e.definition).includes(q)) &&
        (locale === '' || Object.hasOwn(e.translations, locale)) &&
        (flag === '' ||
          (flag === 'doNotTranslate' && e.doNotTranslate) ||
          (flag === 'forbidden' && e.forbidden)),
    );
    const edit = typeof query.edit === 'string' ? termKey(query.edit) : undefined;
    const editing = edit === undefined ? undefined : entries.find((e) => termKey(e.term) === edit);
    // A link to edit an entry that is gone (renamed or removed since) says so, rather than quietly showing
    // the add form. Not in the link's words: a notice never repeats what a URL says (kit.noticeOf).
    const missing =
      typeof query.edit === 'string' && query.edit !== '' && !editing
        ? 'The entry this link edits is not in the glossary any more: it was renamed or removed.'
        : undefined;
    const settings = await pc.call('getGlossarySettings', { params: { account } });
    kit.render(
      res,
      pc,
      'glossary',
      {
        title: `Glossary of @${account}`,
        section: 'dashboard',
        crumbs: crumbs(account, [{ label: 'Glossary' }]),
        acting: { handle: account, role },
        notice: extra.notice ?? missing,
        account,
        glossary,
        total: entries.length,
        matches: matches.length,
        rows: matches.slice(0, SHOWN),
        shown: SHOWN,
        filter: { q: typeof query.q === 'string' ? query.q : '', locale, flag },
        locales: [...new Set(entries.flatMap((e) => Object.keys(e.translations)))].sort(),
        canEdit: pipeline.allows(role, 'glossary:write'),
        canAdmin: pipeline.allows(role, 'glossary:admin'),
        settings: isOk(settings) ? settings.body : undefined,
        entry: extra.entry ?? {
          values: editing
            ? { ...editing, original: editing.term, translations: translationsText(editing.translations) }
            : { term: '', definition: '', translations: '', original: '' },
          fields: {},
          form: [],
        },
        importForm: extra.importForm ?? { values: {}, fields: {}, form: [] },
      },
      extra.status,
    );
  }

  router.get(
    '/accounts/:account/glossary',
    kit.page(async (req, res, pc) => {
      await glossaryPage(res, pc, String(req.params.account), req.query, { notice: kit.noticeOf(req, pc) });
    }),
  );

  // The refused page is built on the newer version, so its forms send that version: the way on is to check
  // and send again. "Reload" posted the refused form again and was refused again, every time.
  const stale =
    'Someone saved a newer version of the glossary meanwhile; nothing was changed. The page now shows that version: check the entry below and save again.';
  const staleRemoval =
    'Someone saved a newer version of the glossary meanwhile; nothing was removed. The page now shows that version: remove the entry again if it should go.';
  const staleImport =
    'Someone saved a newer version of the glossary meanwhile; nothing was imported. The page now shows that version: choose the file again to import it on top of it.';

  /**
   * Saves `entries` as the next version on top of the one the form was built from. A form built when
   * nothing was saved yet has no ETag: it saves only if nothing is saved still (If-None-Match: *, checked
   * in the save's turn), so when `current` (the glossary the entries were made from) exists, or someone
   * saves a first version before this save's turn, the form is refused as stale (412) as it would be with
   * an ETag, not merged into what they saved unseen.
   */
  async function save(
    pc: PageContext,
    account: string,
    current: Glossary | undefined,
    entries: Entry[],
    etag: string,
    changeNote: string,
  ): Promise<OperationResponse> {
    // Such a form, when a version exists already, is sent without its entries: the save checks the entries
    // before its precondition, and would tell the person of a term the form could not know was taken rather
    // than of the newer version. It still goes to the save, which decides who may save at all first (a
    // reader's forged form is a 403, not a 412) and then refuses it as stale.
    const refusedAnyway = etag === '' && current !== undefined;
    return pc.call('saveGlossary', {
      params: { account },
      ...(etag === '' ? { ifNoneMatch: '*' } : { ifMatch: etag }),
      body: refusedAnyway ? { entries: [] } : { entries, ...(changeNote ? { changeNote } : {}) },
    });
  }

  const saved = (res: Response, pc: PageContext, account: string, r: OperationResponse) =>
    res.redirect(303, kit.withNotice(pc, base(account), `Saved as version ${(r.body as Glossary).version}.`));

  router.post(
    '/accounts/:account/glossary/entries',
    ...kit.action(async (req, res, pc) => {
      const account = String(req.params.account);
      const values = {
        original: text(req.body, 'original'),
        term: text(req.body, 'term'),
        definition: multiline(req.body, 'definition'),
        translations: multiline(req.body, 'translations'),
        caseSensitive: text(req.body, 'caseSensitive') === 'on',
        doNotTranslate: text(req.body, 'doNotTranslate') === 'on',
        forbidden: text(req.body, 'forbidden') === 'on',
        changeNote: text(req.body, 'changeNote'),
      };
      const loaded = await load(pc, account);
      if (loaded.failed) return kit.problemPage(res, pc, loaded.failed);
      const entries = [...(loaded.glossary?.entries ?? [])];
      // The entry being edited, named by the form it came from; the add form names none, and adds a new
      // entry even when its term is one the glossary has (refused below, never overwriting that entry).
      const at = values.original ? entries.findIndex((e) => e.term === values.original) : -1;
      // The entry the form edits is gone: someone renamed or removed it since the form was made. Saving
      // would add it back beside the renamed one (or undo the removal); the form says so instead, and is an
      // add form from here on, so that adding it back is a choice.
      if (values.original && at < 0) {
        const gone = `"${values.original}" is no longer in the glossary: someone renamed or removed it since you opened it, and nothing was saved. Save again to add it as a new entry.`;
        return glossaryPage(
          res,
          pc,
          account,
          {},
          { status: 409, entry: { values: { ...values, original: '' }, fields: {}, form: [gone] } },
        );
      }
      const unreadable = translationsProblem(values.translations);
      if (unreadable)
        return glossaryPage(
          res,
          pc,
          account,
          {},
          { status: 400, entry: { values, fields: { translations: unreadable }, form: [] } },
        );
      const storedTranslations = at >= 0 ? entries[at]!.translations : {};
      const entry: Entry = {
        term: values.term.trim(),
        definition: edited(req.body, 'definition', at >= 0 ? entries[at]!.definition : undefined),
        caseSensitive: values.caseSensitive,
        doNotTranslate: values.doNotTranslate,
        forbidden: values.forbidden,
        translations: parseTranslations(values.translations, storedTranslations),
      };
      const index = at >= 0 ? at : entries.length;
      // An entry added or renamed with a term another entry has: the save would name that other entry (a
      // duplicate is reported at its second occurrence), which this form does not show, so say it here.
      // A form built on an older version is told that instead (the save answers 412): the other entry may
      // be what someone saved meanwhile.
      const formIsCurrent = text(req.body, 'etag') === (loaded.glossary?.etag ?? '');
      const other = entries.find((e, i) => i !== index && termKey(e.term) === termKey(entry.term));
      if (other && formIsCurrent) {
        const message = `The glossary already has the term "${other.term}"; edit that entry, or choose another term.`;
        return glossaryPage(
          res,
          pc,
          account,
          {},
          { status: 400, entry: { values, fields: { term: message }, form: [] } },
        );
      }
      // Save pressed on an entry as it is saves no version, as an import that changes nothing does: a new
      // version equal to the last would only push the real history down.
      if (at >= 0 && sameEntry(entries[at], entry)) {
        const notice = `"${entry.term}" is unchanged: no version was saved.`;
        return res.redirect(303, kit.withNotice(pc, base(account), notice));
      }
      entries[index] = entry;
      const note = values.changeNote || `${at >= 0 ? 'Edit' : 'Add'} ${entry.term}`;
      const r = await save(pc, account, loaded.glossary, entries, text(req.body, 'etag'), note);
      if (isOk(r)) return saved(res, pc, account, r);
      if (r.status === 412)
        return glossaryPage(
          res,
          pc,
          account,
          {},
          { status: 412, entry: { values, fields: {}, form: [stale] } },
        );
      if (r.status !== 400 && r.status !== 409) return kit.problemPage(res, pc, r);
      // Problems of this entry point at /body/entries/<index>/<field>: show them next to its fields.
      const { fields, form } = formErrors(r);
      // Problems of other entries (stored before this change) are said above the form, never dropped.
      const prefix = `entries.${index}.`;
      const own = Object.fromEntries(
        Object.entries(fields)
          .filter(([k]) => k.startsWith(prefix))
          .map(([k, v]) => [k.slice(prefix.length), v]),
      );
      const others = Object.entries(fields)
        .filter(([k]) => !k.startsWith(prefix))
        .map(([, v]) => v);
      await glossaryPage(
        res,
        pc,
        account,
        {},
        {
          status: r.status,
          entry: { values, fields: own, form: [...form, ...others] },
        },
      );
    }),
  );

  router.post(
    '/accounts/:account/glossary/entries/remove',
    ...kit.action(async (req, res, pc) => {
      const account = String(req.params.account);
      const term = text(req.body, 'term');
      const loaded = await load(pc, account);
      if (loaded.failed) return kit.problemPage(res, pc, loaded.failed);
      const entries = (loaded.glossary?.entries ?? []).filter((e) => e.term !== term);
      const r = await save(pc, account, loaded.glossary, entries, text(req.body, 'etag'), `Remove ${term}`);
      if (isOk(r)) return saved(res, pc, account, r);
      if (r.status === 412) return glossaryPage(res, pc, account, {}, { status: 412, notice: staleRemoval });
      return kit.problemPage(res, pc, r);
    }),
  );

  router.post(
    '/accounts/:account/glossary/import',
    ...kit.action(async (req, res, pc) => {
      const account = String(req.params.account);
      const file = (req as { file?: { buffer: Buffer } }).file;
      // A refused import keeps the change note the person typed (a file input cannot be filled again).
      const values = { changeNote: text(req.body, 'changeNote') };
      const importForm = (message: string) => ({ values, fields: { file: message }, form: [] });
      const failed = (status: number, message: string) =>
        glossaryPage(res, pc, account, {}, { status, importForm: importForm(message) });
      if (!file || file.buffer.length === 0) return failed(400, 'Choose a CSV file.');
      const loaded = await load(pc, account);
      if (loaded.failed) return kit.problemPage(res, pc, loaded.failed);
      let csvColumns: FileColumns;
      let rows: { entry: Entry; line: number }[];
      try {
        const text = utf8Csv(file.buffer);
        if (!text)
          return failed(400, 'The file is not UTF-8 text: save it as "CSV UTF-8" and import it again.');
        // The locales the glossary has are columns of its own export, whatever their shape.
        const known = new Set((loaded.glossary?.entries ?? []).flatMap((e) => Object.keys(e.translations)));
        ({ file: csvColumns, rows } = fromCsv(text, known));
      } catch (error) {
        return failed(400, `This is not a CSV file we can read: ${(error as Error).message}`);
      }
      // Merged by term: a row updates the entry with its term in the columns the file has (mergeRow), other
      // rows are added at the end.
      const entries = [...(loaded.glossary?.entries ?? [])];
      // Terms match in any Unicode normalization form, as in upsertGlossaryEntries.
      const position = new Map(entries.map((e, i) => [termKey(e.term), i]));
      const lineOf = new Map<number, number>();
      // A term twice in the file is a mistake in it (which row was meant?), not a row to drop unseen.
      const fileLineOf = new Map<string, number>();
      for (const { entry, line } of rows) {
        const key = termKey(entry.term);
        const earlier = fileLineOf.get(key);
        if (earlier !== undefined)
          return failed(
            400,
            `Line ${line} repeats the term "${entry.term}" of line ${earlier}; list each term once.`,
          );
        fileLineOf.set(key, line);
        const at = position.get(key) ?? entries.length;
        entries[at] = mergeRow(entries[at], entry, csvColumns);
        position.set(key, at);
        lineOf.set(at, line);
      }
      // A file that changes nothing (the export imported back, a header alone) saves no version: a new
      // version equal to the last would only push the real history down.
      const before = loaded.glossary?.entries ?? [];
      const unchanged =
        entries.length === before.length &&
        rows.every(({ entry }) => {
          const at = position.get(termKey(entry.term))!;
          return sameEntry(before[at], entries[at]!);
        });
      if (unchanged) {
        const notice = 'The file changes nothing in the glossary: no version was saved.';
        return res.redirect(303, kit.withNotice(pc, base(account), notice));
      }
      const note =
        values.changeNote || `Import ${rows.length} ${rows.length === 1 ? 'row' : 'rows'} from CSV`;
      const r = await save(pc, account, loaded.glossary, entries, text(req.body, 'etag'), note);
      if (isOk(r)) return saved(res, pc, account, r);
      if (r.status === 412) return failed(412, staleImport);
      if (r.status !== 400) return kit.problemPage(res, pc, r);
      const { fields, form } = formErrors(r);
      const lines = Object.entries(fields).map(([key, message]) => {
        const [, index, column] = /^entries\.(\d+)\.?(\w*)/.exec(key) ?? [];
        const line = lineOf.get(Number(index));
        return line ? `Line ${line}${column ? `, ${column}` : ''}: ${message}` : message;
      });
      await glossaryPage(
        res,
        pc,
        account,
        {},
        {
          status: 400,
          importForm: importForm([...form, ...lines].slice(0, 20).join(' · ')),
        },
      );
    }, upload(kit)),
  );

  router.get(
    '/accounts/:account/glossary.csv',
    kit.page(async (req, res, pc) => {
      const account = String(req.params.account);
      // A missing or hidden account answers like the glossary page: the pages' HTML 404 (the link is
      // opened in a browser, so a person reads it), not an empty file that says the glossary is empty.
      const loaded = await loadOnAccount(pc, account);
      if (loaded.failed) return kit.problemPage(res, pc, loaded.failed);
      res
        .type('text/csv')
        .set('Content-Disposition', `attachment; filename="${account}-glossary.csv"`)
        .set('Cache-Control', 'no-store')
        .send(toCsv(loaded.glossary?.entries ?? []));
    }),
  );

  router.post(
    '/accounts/:account/glossary/settings',
    ...kit.action(async (req, res, pc) => {
      const account = String(req.params.account);
      const r = await pc.call('updateGlossarySettings', {
        params: { account },
        ifMatch: text(req.body, 'etag') || undefined,
        body: { enforcementMode: text(req.body, 'enforcementMode') },
      });
      if (isOk(r)) return res.redirect(303, kit.withNotice(pc, base(account), 'Glossary settings saved.'));
      if (r.status === 412) {
        const notice =
          'Someone changed the glossary settings meanwhile; nothing was changed. The page now shows their settings: choose again and save.';
        return glossaryPage(res, pc, account, {}, { status: 412, notice });
      }
      return kit.problemPage(res, pc, r);
    }),
  );

  router.get(
    '/accounts/:account/glossary/history',
    kit.page(async (req, res, pc) => {
      const account = String(req.params.account);
      const history = await newestVersions<{ version: number }>(pc.call, 'listGlossaryVersions', account);
      if ('failed' in history) return kit.problemPage(res, pc, history.failed);
      const { versions, total } = history;
      kit.render(res, pc, 'glossary-history', {
        title: `Glossary history of @${account}`,
        section: 'dashboard',
        crumbs: crumbs(account, [{ href: base(account), label: 'Glossary' }, { label: 'History' }]),
        acting: { handle: account, role: await roleOn(pc, account) },
        account,
        versions,
        total,
        from: versions[1]?.version,
        to: versions[0]?.version,
      });
    }),
  );

  router.get(
    '/accounts/:account/glossary/diff',
    kit.page(async (req, res, pc) => {
      const account = String(req.params.account);
      const [from, to] = [req.query.from, req.query.to].map((v) => (typeof v === 'string' ? v : ''));
      const [a, b] = await Promise.all([load(pc, account, from || '0'), load(pc, account, to || '0')]);
      if (a.failed || !a.glossary) return kit.problemPage(res, pc, a.failed ?? { status: 404 });
      if (b.failed || !b.glossary) return kit.problemPage(res, pc, b.failed ?? { status: 404 });
      const older = new Map(a.glossary.entries.map((e) => [e.term, e]));
      const newer = new Map(b.glossary.entries.map((e) => [e.term, e]));
      const terms = [...new Set([...older.keys(), ...newer.keys()])];
      const changes = terms
        .map((term) => {
          const [was, now] = [entryText(older.get(term)), entryText(newer.get(term))];
          const change = !older.has(term)
            ? 'added'
            : !newer.has(term)
              ? 'removed'
              : was === now
                ? ''
                : 'changed';
          return { term, change, was, now };
        })
        .filter((row) => row.change !== '');
      // Only the rows the page shows are diffed, within the page's budget.
      const wordDiff = boundedWordDiff();
      const rows = changes
        .slice(0, 500)
        .map(({ term, change, was, now }) => ({ term, change, parts: wordDiff(was, now) }));
      kit.render(res, pc, 'glossary-diff', {
        title: `Glossary of @${account}: version ${a.glossary.version} and ${b.glossary.version}`,
        section: 'dashboard',
        crumbs: crumbs(account, [
          { href: base(account), label: 'Glossary' },
          { href: `${base(account)}/history`, label: 'History' },
          { label: 'Diff' },
        ]),
        acting: { handle: account, role: await roleOn(pc, account) },
        account,
        older: a.glossary,
        newer: b.glossary,
        rows,
        changed: changes.length,
      });
    }),
  );
}
