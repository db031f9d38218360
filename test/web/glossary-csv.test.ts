// The glossary's CSV export and import over plain HTTP (a cookie jar, no browser): whatever a glossary
// holds, its export imports back as the same glossary. pages.test.ts walks the same pages in chromium.
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { type CookieJar, csrfOf, postForm, signedInJar, sql, uniqueHandle } from '../oauth/helpers.ts';
import { startTestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));

const signedIn = (handle: string) => signedInJar(service, handle);

/** Posts `csv` through the page's import form, as the page has it now. */
async function postCsv(
  jar: CookieJar,
  account: string,
  csv: string | Buffer,
  changeNote?: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const page = await jar.fetch(`${service.url}/accounts/${account}/glossary`);
  const html = await page.text();
  const importForm = html.slice(html.indexOf('/glossary/import'));
  const form = new FormData();
  form.set('csrf', csrfOf(importForm));
  form.set('etag', /name="etag" value="([^"]*)"/.exec(importForm)![1]!.replaceAll('&quot;', '"'));
  form.set('file', new File([new Uint8Array(Buffer.from(csv))], 'terms.csv', { type: 'text/csv' }));
  if (changeNote !== undefined) form.set('changeNote', changeNote);
  return jar.fetch(`${service.url}/accounts/${account}/glossary/import`, {
    method: 'POST',
    body: form,
    headers,
  });
}

async function importCsv(jar: CookieJar, account: string, csv: string | Buffer): Promise<void> {
  const imported = await postCsv(jar, account, csv);
  expect(imported.status, await imported.clone().text()).toBe(303);
}

async function exportCsv(jar: CookieJar, account: string): Promise<string> {
  const exported = await jar.fetch(`${service.url}/accounts/${account}/glossary.csv`);
  expect(exported.status).toBe(200);
  return exported.text();
}

describe('glossary CSV', () => {
  it('exports cells with leading or trailing whitespace so that they import back as they were', async () => {
    // The import trims unquoted cells (a hand-made CSV has spaces after its commas), and keeps what is
    // inside quotes: so a definition indented with spaces, or a translation ending in one, must leave
    // the export quoted, or a round trip through the CSV cuts it off.
    const owner = uniqueHandle('csv');
    const jar = await signedIn(owner);
    await importCsv(
      jar,
      owner,
      [
        'term,definition,caseSensitive,doNotTranslate,forbidden,de,fr',
        'indent,"  - a Markdown list item",false,false,false,"Einzug ","\u00a0retrait"',
        'plain, unquoted is trimmed ,false,false,false,schlicht,',
      ].join('\n'),
    );
    const csv = await exportCsv(jar, owner);
    const flags = { caseSensitive: 'false', doNotTranslate: 'false', forbidden: 'false' };
    expect(parse(csv, { columns: true })).toEqual([
      {
        term: 'indent',
        definition: '  - a Markdown list item',
        ...flags,
        de: 'Einzug ',
        fr: '\u00a0retrait',
      },
      { term: 'plain', definition: 'unquoted is trimmed', ...flags, de: 'schlicht', fr: '' },
    ]);

    const reader = uniqueHandle('csv');
    const readerJar = await signedIn(reader);
    await importCsv(readerJar, reader, csv);
    expect(await exportCsv(readerJar, reader)).toBe(csv);
  });

  it('keeps translations an edit of the entry leaves alone exactly, line breaks and edge spaces included', async () => {
    const owner = uniqueHandle('cse');
    const jar = await signedIn(owner);
    await importCsv(
      jar,
      owner,
      [
        'term,definition,caseSensitive,doNotTranslate,forbidden,de,fr',
        'indent,old,false,false,false,"Einzug ","ligne un\nligne deux"',
      ].join('\n'),
    );
    // The entry's form as the page has it; only the definition is changed.
    const html = await (await jar.fetch(`${service.url}/accounts/${owner}/glossary?edit=indent`)).text();
    const form = html.slice(html.indexOf(`action="/accounts/${owner}/glossary/entries"`));
    const fromHtml = (text: string) =>
      text
        .replaceAll('&quot;', '"')
        .replaceAll('&#39;', "'")
        .replaceAll('&lt;', '<')
        .replaceAll('&gt;', '>')
        .replaceAll('&amp;', '&');
    const translations = fromHtml(/name="translations"[^>]*>\n([\s\S]*?)<\/textarea>/.exec(form)![1]!);
    const saved = await postForm(jar, `${service.url}/accounts/${owner}/glossary/entries`, {
      csrf: csrfOf(form),
      etag: fromHtml(/name="etag" value="([^"]*)"/.exec(form)![1]!),
      original: 'indent',
      term: 'indent',
      definition: 'new',
      translations,
    });
    expect(saved.status).toBe(303);
    const [row] = parse(await exportCsv(jar, owner), { columns: true }) as Record<string, string>[];
    expect(row).toMatchObject({ definition: 'new', de: 'Einzug ', fr: 'ligne un\nligne deux' });
  });

  it('names the line of the file a problem is on, past cells with line breaks and empty lines', async () => {
    const owner = uniqueHandle('csl');
    const jar = await signedIn(owner);
    const csv = [
      'term,definition,caseSensitive,doNotTranslate,forbidden,de', // line 1
      'multi,"a definition', // line 2
      'over three', // line 3
      'lines",false,false,false,mehrzeilig', // line 4
      '', // line 5, skipped
      'fine,ok,false,false,false,gut', // line 6
      '  ,no term,false,false,false,leer', // line 7
    ].join('\r\n');
    const refused = await postCsv(jar, owner, `${csv}\r\n`, 'My careful change note');
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toMatch(/<p class="field-error" id="f-import-file-error">Line 7, term: [^<]*<\/p>/);
    // What the person typed next to the file is still there (the file itself cannot be).
    expect(html).toMatch(/id="f-import-note"[^>]* value="My careful change note"/);
    // Nothing was imported.
    expect(html).toContain('No glossary saved yet.');
  });

  it('says when it is the header that is wrong: another spelling, a locale written with _, no term column', async () => {
    const owner = uniqueHandle('csh');
    const jar = await signedIn(owner);
    const headers: [csv: string, message: string][] = [
      ['Term,Definition\nalpha,A\n', 'names a column &quot;Term&quot;: did you mean &quot;term&quot;?'],
      ['term,pt_BR\nalpha,A\n', 'write the locale pt-BR'],
      ['word|meaning\nalpha|A\n', 'first line names no &quot;term&quot; column'],
    ];
    for (const [csv, message] of headers) {
      const refused = await postCsv(jar, owner, csv);
      expect(refused.status, csv).toBe(400);
      expect(await refused.text(), csv).toContain(message);
    }
  });

  it('reads the files spreadsheets write: semicolons, a sep= line, tabs in UTF-16, rows of empty cells', async () => {
    const owner = uniqueHandle('css');
    const jar = await signedIn(owner);
    const utf16 = (text: string) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    // Excel and LibreOffice in German write semicolons; Excel may lead with sep=; "Unicode Text" is UTF-16
    // with tabs; cleared cells leave rows of separators behind.
    await importCsv(jar, owner, 'term;definition;de\r\n"a;b";"eins, zwei";Eins\r\n;;\r\n');
    await importCsv(jar, owner, 'sep=;\r\nterm;de\r\nbeta;Zwei\r\n');
    await importCsv(jar, owner, utf16('term\tdefinition\r\ngamma\tdrei, vier\r\n\t\r\n'));
    await importCsv(jar, owner, 'term,definition\ndelta,vier\n,\n , \n');
    expect(parse(await exportCsv(jar, owner), { columns: true })).toEqual([
      {
        term: 'a;b',
        definition: 'eins, zwei',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: 'Eins',
      },
      {
        term: 'beta',
        definition: '',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: 'Zwei',
      },
      {
        term: 'gamma',
        definition: 'drei, vier',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: '',
      },
      {
        term: 'delta',
        definition: 'vier',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: '',
      },
    ]);
  });

  it('refuses a column it would misread: a misspelt one, one that is no locale, one named twice, an unknown flag', async () => {
    const owner = uniqueHandle('csc');
    const jar = await signedIn(owner);
    for (const [csv, message] of [
      // Each was imported: the first two as translations into the "locales" forbiden and notes (the
      // rule dropped), the third kept only its last de cell, the fourth read "Y" as false.
      [
        'term,definition,forbiden\nbadword,x,true\n',
        /&quot;forbiden&quot;: did you mean &quot;forbidden&quot;\?/,
      ],
      ['term,definition,notes\nbadword,x,internal\n', /&quot;notes&quot;, which is neither one of term/],
      ['term,de,de\nx,a,b\n', /names the column &quot;de&quot; twice/],
      [
        'term,definition,caseSensitive,doNotTranslate,forbidden\nflag,,Y,ja,false\n',
        /line 2 has &quot;ja&quot; in the doNotTranslate column/,
      ],
    ] as const) {
      const refused = await postCsv(jar, owner, csv);
      expect(refused.status, csv).toBe(400);
      expect(await refused.text(), csv).toMatch(message);
    }
    // Locales of any case and shape the API takes, flags in their other spellings and a trailing comma
    // (spreadsheets write one) still import.
    await importCsv(
      jar,
      owner,
      'term,definition,caseSensitive,doNotTranslate,forbidden,DE,pt-BR,te,\nfine,ok,yes,x,0,gut,bom,మంచి,\n',
    );
    expect(parse(await exportCsv(jar, owner), { columns: true, bom: true })).toEqual([
      {
        term: 'fine',
        definition: 'ok',
        caseSensitive: 'true',
        doNotTranslate: 'true',
        forbidden: 'false',
        de: 'gut',
        'pt-BR': 'bom',
        te: 'మంచి',
      },
    ]);
  });

  it('imports its own export back, a locale of a rare shape included, and refuses a cell under no column name', async () => {
    const owner = uniqueHandle('csr');
    const jar = await signedIn(owner);
    // A language code of five letters: BCP 47 allows it and the API takes it, so an export may name it.
    await importCsv(jar, owner, 'term,definition,de\nrt,d,y\n');
    const page = await (await jar.fetch(`${service.url}/accounts/${owner}/glossary`)).text();
    const entryForm = page.slice(page.indexOf(`action="/accounts/${owner}/glossary/entries"`));
    const edited = await postForm(jar, `${service.url}/accounts/${owner}/glossary/entries`, {
      csrf: csrfOf(entryForm),
      etag: /name="etag" value="([^"]*)"/.exec(entryForm)![1]!.replaceAll('&quot;', '"'),
      original: 'rt',
      term: 'rt',
      definition: 'd',
      translations: 'abcde = x\nde = y',
    });
    expect(edited.status).toBe(303);
    const exported = await exportCsv(jar, owner);
    expect(exported.split('\n')[0]).toBe('term,definition,caseSensitive,doNotTranslate,forbidden,abcde,de');
    const back = await postCsv(jar, owner, exported);
    expect(back.status).toBe(303);
    expect(new URL(back.headers.get('location')!, service.url).searchParams.get('notice')).toContain(
      'changes nothing',
    );
    // A new column of that shape is still taken for a typo.
    const typo = await postCsv(jar, owner, 'term,definition,abcdf\nrt,d,z\n');
    expect(typo.status).toBe(400);
    // An empty column with no name (a trailing comma) is left out; one holding something is refused.
    await importCsv(jar, owner, 'term,definition,de,\nother,o,p,\n');
    const unnamed = await postCsv(jar, owner, 'term,,de\nws14,oops,y\n');
    expect(unnamed.status).toBe(400);
    expect(await unnamed.text()).toMatch(
      /line 2 has &quot;oops&quot; in column 2, which the first line does not name/,
    );
  });

  it('updates what the file has columns for and keeps the rest: a one-language file changes that language only', async () => {
    const owner = uniqueHandle('csv');
    const jar = await signedIn(owner);
    await importCsv(
      jar,
      owner,
      [
        'term,definition,caseSensitive,doNotTranslate,forbidden,de,fr,de-CH',
        'Workspace,A group of projects,true,false,false,Arbeitsbereich,espace,Arbeitsraum',
        'Project,One product,false,false,false,Projekt,projet,',
      ].join('\n'),
    );
    // A translator's German file, one locale column written in another case, one term new.
    await importCsv(
      jar,
      owner,
      [
        'term,de,DE-ch',
        'Workspace,Arbeitsfläche,',
        'Project,Vorhaben,Projekt',
        'Release,Veröffentlichung,',
      ].join('\n'),
    );
    expect(parse(await exportCsv(jar, owner), { columns: true })).toEqual([
      {
        term: 'Workspace',
        definition: 'A group of projects',
        caseSensitive: 'true',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: 'Arbeitsfläche',
        fr: 'espace',
        'de-CH': '',
      },
      {
        term: 'Project',
        definition: 'One product',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: 'Vorhaben',
        fr: 'projet',
        'de-CH': 'Projekt',
      },
      {
        term: 'Release',
        definition: '',
        caseSensitive: 'false',
        doNotTranslate: 'false',
        forbidden: 'false',
        de: 'Veröffentlichung',
        fr: '',
        'de-CH': '',
      },
    ]);
  });

  it('reads a locale column in any spelling as the locale it names: no version for no change, no column twice', async () => {
    const owner = uniqueHandle('csv');
    const jar = await signedIn(owner);
    await importCsv(jar, owner, 'term,de\ngamma,G');
    const versions = async () =>
      (
        await sql(
          service,
          `select v.version from glossary_versions v join accounts a on a.id = v.account_id where a.handle = $1`,
          [owner],
        )
      ).length;
    for (const spelling of ['DE', 'De']) {
      const same = await postCsv(jar, owner, `term,${spelling}\ngamma,G`);
      expect(same.status, spelling).toBe(303);
      const notice = new URL(same.headers.get('location') ?? '', service.url).searchParams.get('notice');
      expect(notice, spelling).toContain('changes nothing');
    }
    expect(await versions()).toBe(1);
    const twice = await postCsv(jar, owner, 'term,de,DE\ngamma,G,H');
    expect(twice.status).toBe(400);
    expect(await twice.text()).toContain(
      'names the locale de twice, as &quot;de&quot; and as &quot;DE&quot;',
    );
    expect(await versions()).toBe(1);
  });

  it('refuses a file that lists a term twice, naming both lines, instead of keeping the later row', async () => {
    const owner = uniqueHandle('csd');
    const jar = await signedIn(owner);
    const csv = [
      'term,definition,caseSensitive,doNotTranslate,forbidden',
      'cafe\u0301,first,false,false,false', // line 2: café, decomposed
      'other,fine,false,false,false',
      'café,second,false,false,false', // line 4: café, composed
    ].join('\n');
    const refused = await postCsv(jar, owner, `${csv}\n`);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toMatch(
      /<p class="field-error" id="f-import-file-error">Line 4 repeats the term &quot;café&quot; of line 2;/,
    );
    expect(html).toContain('No glossary saved yet.');
  });

  it('reads a UTF-16 file by its byte-order mark, and refuses one that is not UTF-8 rather than guess', async () => {
    const owner = uniqueHandle('cse');
    const jar = await signedIn(owner);
    const csv = 'term,definition,caseSensitive,doNotTranslate,forbidden\ncafé,Kaffeehaus,false,false,false\n';
    // Latin-1 bytes: é is 0xE9, which UTF-8 never has alone; read anyway, it would be saved as U+FFFD.
    const latin1 = await postCsv(jar, owner, Buffer.from(csv, 'latin1'));
    expect(latin1.status).toBe(400);
    expect(await latin1.text()).toContain('The file is not UTF-8 text');
    // UTF-16 with its byte-order mark, as a spreadsheet's "Unicode text" writes it.
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(csv, 'utf16le')]);
    await importCsv(jar, owner, utf16);
    expect((parse(await exportCsv(jar, owner)) as string[][])[1]!.slice(0, 2)).toEqual([
      'café',
      'Kaffeehaus',
    ]);
  });

  it('refuses an upload sent with a Content-Encoding, which it would read as the form itself', async () => {
    const owner = uniqueHandle('csz');
    const jar = await signedIn(owner);
    const csv = 'term,definition\nalpha,A\n';
    for (const encoding of ['gzip', 'x-unknown']) {
      const refused = await postCsv(jar, owner, csv, undefined, { 'content-encoding': encoding });
      expect(refused.status, encoding).toBe(415);
    }
    expect(await (await jar.fetch(`${service.url}/accounts/${owner}/glossary`)).text()).toContain(
      'No glossary saved yet.',
    );
  });

  it('saves no version for a file that changes nothing, such as its own export imported back', async () => {
    const owner = uniqueHandle('csn');
    const jar = await signedIn(owner);
    await importCsv(jar, owner, 'term,definition,de\nalpha,A,Alpha\nbeta,B,Beta\n');
    const versions = async () =>
      sql(
        service,
        `select count(*)::int as n from glossary_versions v join accounts a on a.id = v.account_id
        where a.handle = $1`,
        [owner],
      );
    expect(await versions()).toEqual([{ n: 1 }]);
    for (const same of [
      await exportCsv(jar, owner),
      'term,definition,de\n',
      'de,term,definition\nAlpha,alpha,A\n',
    ]) {
      const again = await postCsv(jar, owner, same);
      expect(again.status).toBe(303);
      const page = await (await jar.fetch(`${service.url}${again.headers.get('location')}`)).text();
      expect(page).toContain('The file changes nothing in the glossary: no version was saved.');
    }
    expect(await versions()).toEqual([{ n: 1 }]);
    // A real change still saves.
    await importCsv(jar, owner, 'term,definition\nbeta,B2\n');
    expect(await versions()).toEqual([{ n: 2 }]);
  });
});
