import { domainToASCII } from 'node:url';
// The voice and glossary editors and the list pages over plain HTTP (a cookie jar, no browser): what a
// form that fails says, what a stale form is told, and lists longer than one page of the API.
// pages.test.ts walks the same pages in chromium.
import { describe, expect, it } from 'vitest';
import { Membership, User } from '../../src/db/entities/index.ts';
import { openDatabase } from '../../src/db/orm.ts';
import { issueInvitation } from '../../src/domain/invitations.ts';
import { createOrganization } from '../../src/domain/organizations.ts';
import { createUserWithAccount } from '../../src/domain/users.ts';
import { type CookieJar, csrfOf, postForm, signedInJar, sql, uniqueHandle } from '../oauth/helpers.ts';
import { burstFromAnotherProcess } from '../support/burst.ts';
import { tagPattern } from '../support/etag.ts';
import { createTestOrganization, createTestUser } from '../support/fixtures.ts';
import { startTestService } from '../support/service.ts';
import { useService } from '../support/suite.ts';

const service = useService(() => startTestService({ DEV_LOGIN: 'true' }));

const signedIn = (handle: string) => signedInJar(service, handle);

/** The page's HTML from the form posting to `action` on: its CSRF token and etag are the form's own. */
async function formOn(jar: CookieJar, path: string, action: string): Promise<string> {
  const html = await (await jar.fetch(`${service.url}${path}`)).text();
  return html.slice(html.indexOf(`action="${action}"`));
}

const etagOf = (form: string) => /name="etag" value="([^"]*)"/.exec(form)![1]!.replaceAll('&quot;', '"');

/** Posts the glossary's entry form as the page has it now, with `fields`. */
async function postEntry(jar: CookieJar, account: string, fields: Record<string, string>) {
  const action = `/accounts/${account}/glossary/entries`;
  const form = await formOn(jar, `/accounts/${account}/glossary`, action);
  return postForm(jar, `${service.url}${action}`, { csrf: csrfOf(form), etag: etagOf(form), ...fields });
}

describe('the glossary editor', () => {
  it('says why an entry renamed to a term the glossary already has is not saved', async () => {
    const owner = uniqueHandle('ged');
    const jar = await signedIn(owner);
    for (const term of ['alpha', 'beta']) {
      expect((await postEntry(jar, owner, { term, definition: term.toUpperCase() })).status).toBe(303);
    }
    const clash = await postEntry(jar, owner, { original: 'alpha', term: 'beta', definition: 'renamed' });
    expect(clash.status).toBe(400);
    const html = await clash.text();
    // The message is next to the term field, and what was typed is still there.
    expect(html).toMatch(/<p class="field-error" id="f-entry-term-error">[^<]*beta[^<]*<\/p>/);
    expect(html).toContain('<textarea id="f-entry-definition" name="definition">\nrenamed</textarea>');
  });
});

describe('an edit of an entry someone renamed or removed meanwhile', () => {
  it('is refused, saying so, rather than bringing the entry back beside the renamed one', async () => {
    const owner = uniqueHandle('gre');
    const jar = await signedIn(owner);
    for (const term of ['flagtest', 'keep']) {
      expect((await postEntry(jar, owner, { term, definition: 'first' })).status).toBe(303);
    }
    const editPath = `/accounts/${owner}/glossary?edit=flagtest`;
    const action = `/accounts/${owner}/glossary/entries`;
    const staleForm = await formOn(jar, editPath, action);
    expect(staleForm).toContain('name="original" value="flagtest"');
    // Another tab renames it.
    const other = await formOn(jar, editPath, action);
    const renamed = await postForm(jar, `${service.url}${action}`, {
      csrf: csrfOf(other),
      etag: etagOf(other),
      original: 'flagtest',
      term: 'flagtest-renamed',
      definition: 'first',
    });
    expect(renamed.status).toBe(303);
    // This tab's edit, sent with the current ETag (as after a refused stale save, whose form carries it).
    const current = etagOf(await formOn(jar, `/accounts/${owner}/glossary`, action));
    const edit = await postForm(jar, `${service.url}${action}`, {
      csrf: csrfOf(staleForm),
      etag: current,
      original: 'flagtest',
      term: 'flagtest',
      definition: 'edited',
    });
    expect(edit.status).toBe(409);
    const html = await edit.text();
    expect(html).toContain('no longer in the glossary');
    // What was typed is kept, and the form adds from here on.
    expect(html).toContain('<textarea id="f-entry-definition" name="definition">\nedited</textarea>');
    expect(html).toContain('name="original" value=""');
    const page = await (await jar.fetch(`${service.url}/accounts/${owner}/glossary`)).text();
    expect(page).toContain('flagtest-renamed');
    expect(page).not.toMatch(/>flagtest</);
    // A link to edit it now says it is gone, instead of quietly showing the add form.
    const link = await (await jar.fetch(`${service.url}${editPath}`)).text();
    expect(link).toContain('The entry this link edits is not in the glossary any more');
  });
});

describe('the glossary add form', () => {
  it('refuses a term the glossary already has instead of overwriting that entry', async () => {
    const owner = uniqueHandle('gad');
    const jar = await signedIn(owner);
    for (const term of ['dashboard', 'café']) {
      const added = await postEntry(jar, owner, {
        term,
        definition: 'Main screen',
        translations: 'de = Übersicht',
        doNotTranslate: 'on',
      });
      expect(added.status).toBe(303);
    }
    // The same terms through the add form (no `original`), one of them in the other Unicode form.
    for (const [term, named] of [
      ['dashboard', 'dashboard'],
      ['cafe\u0301', 'café'],
    ]) {
      const again = await postEntry(jar, owner, { term: term!, definition: 'oops' });
      expect(again.status).toBe(400);
      expect(await again.text()).toMatch(
        new RegExp(`<p class="field-error" id="f-entry-term-error">[^<]*${named}[^<]*</p>`),
      );
    }
    const page = await (await jar.fetch(`${service.url}/accounts/${owner}/glossary`)).text();
    expect(page).not.toContain('oops');
    expect(
      page.match(/<td data-label="Translations">de: <span lang="de">Übersicht<\/span><\/td>/g),
    ).toHaveLength(2);
  });
});

describe('the glossary settings form', () => {
  it('tells a stale form that the settings changed, not the glossary', async () => {
    const owner = uniqueHandle('gst');
    const jar = await signedIn(owner);
    const glossary = `/accounts/${owner}/glossary`;
    const action = `${glossary}/settings`;
    const [first, second] = [await formOn(jar, glossary, action), await formOn(jar, glossary, action)];
    const save = (form: string, enforcementMode: string) =>
      postForm(jar, `${service.url}${action}`, { csrf: csrfOf(form), etag: etagOf(form), enforcementMode });
    expect((await save(first, 'strict')).status).toBe(303);
    const late = await save(second, 'warn');
    expect(late.status).toBe(412);
    const html = await late.text();
    expect(html).toContain('Someone changed the glossary settings meanwhile');
    expect(html).not.toContain('newer version of the glossary');
  });
});

describe('the glossary editor before the first save', () => {
  it('refuses a form built on the empty glossary once someone saved, instead of overwriting unseen', async () => {
    const owner = uniqueHandle('gfs');
    const jar = await signedIn(owner);
    const glossary = `/accounts/${owner}/glossary`;
    const action = `${glossary}/entries`;
    // Two people open the empty glossary: both forms carry no ETag.
    const [first, second] = [await formOn(jar, glossary, action), await formOn(jar, glossary, action)];
    expect(etagOf(first)).toBe('');
    const add = (form: string, definition: string) =>
      postForm(jar, `${service.url}${action}`, {
        csrf: csrfOf(form),
        etag: etagOf(form),
        term: 'workspace',
        definition,
      });
    expect((await add(first, 'Saved first')).status).toBe(303);
    // The second "Add" names the same term: it must not replace the entry its author never saw.
    const late = await add(second, 'Typed meanwhile');
    expect(late.status).toBe(412);
    const html = await late.text();
    expect(html).toContain('Someone saved a newer version of the glossary meanwhile');
    expect(html).toContain('>\nTyped meanwhile</textarea>');
    // The refused form stands on the newer version, so sending it again is not refused as stale: the page
    // says so, where "Reload and try again" posted the refused form again, and again.
    expect(html).toContain('The page now shows that version: check the entry below and save again.');
    expect(etagOf(html.slice(html.indexOf(`action="${action}"`)))).toMatch(tagPattern('v', 1));
    // The same form sent twice (a double click) saves once.
    expect((await add(first, 'Saved first')).status).toBe(412);
    const now = await (await jar.fetch(`${service.url}${glossary}`)).text();
    expect(now).toContain('Version 1 ·');
    expect(now).toContain('<td data-label="Definition" class="multiline">Saved first</td>');
  });

  it("answers a reader's forged add with 403, not as a stale form, and saves nothing", async () => {
    const admin = await createTestUser(service, uniqueHandle('gfa'));
    const reader = await createTestUser(service, uniqueHandle('gfr'));
    const org = uniqueHandle('gfo');
    await createTestOrganization(service, org, admin, { members: [reader] });
    const adminJar = await signedIn(admin.handle);
    expect((await postEntry(adminJar, org, { term: 'workspace', definition: 'first' })).status).toBe(303);
    // A member reads the glossary and has no form to add with: the forged one carries their own CSRF token
    // and no ETag, as a form built on the empty glossary would.
    const jar = await signedIn(reader.handle);
    const leave = await formOn(jar, `/orgs/${org}`, `/orgs/${org}/leave`);
    const forged = await postForm(jar, `${service.url}/accounts/${org}/glossary/entries`, {
      csrf: csrfOf(leave),
      etag: '',
      term: 'takeover',
      definition: 'forged',
    });
    expect(forged.status).toBe(403);
    expect(await forged.text()).not.toContain('This form expired');
    expect(
      await sql(
        service,
        `select count(*)::int as n from glossary_versions v join accounts a on a.id = v.account_id
          where a.handle = $1`,
        [org],
      ),
    ).toEqual([{ n: 1 }]);
  });
});

describe('the glossary filters', () => {
  it('match a locale only by the translations an entry has, never by a name every object knows', async () => {
    const owner = uniqueHandle('flt');
    const jar = await signedIn(owner);
    expect((await postEntry(jar, owner, { term: 'alpha', definition: 'A' })).status).toBe(303);
    const page = (locale: string) =>
      jar.fetch(`${service.url}/accounts/${owner}/glossary?locale=${locale}`).then((r) => r.text());
    // `constructor` is a key of every JavaScript object, translations or not.
    for (const locale of ['constructor', 'toString', 'de']) {
      expect(await page(locale), locale).not.toContain('?edit=alpha');
    }
    expect(await page('')).toContain('?edit=alpha');
  });
});

describe('history pages', () => {
  it('list the newest versions, and compare the newest two, past the first hundred', {
    timeout: 120_000,
  }, async () => {
    const owner = uniqueHandle('his');
    const jar = await signedIn(owner);
    const voice = `/accounts/${owner}/voice`;
    const csrf = csrfOf(await formOn(jar, voice, voice));
    // 102 versions of each: one more than a page of the API holds, and one more than the page lists. A
    // version's tag is its number and the account's mark, read once from the first version's form.
    let mark = '';
    for (let i = 1; i <= 102; i++) {
      const previous = i === 1 ? '' : `"v${i - 1}${mark}"`;
      const saved = await postForm(jar, `${service.url}${voice}`, {
        csrf,
        tone: `tone ${i}`,
        formality: 'neutral',
        localeOverrides: '{}',
        etag: previous,
      });
      expect(saved.status).toBe(303);
      const entry = await postForm(jar, `${service.url}/accounts/${owner}/glossary/entries`, {
        csrf,
        etag: previous,
        term: `term ${i}`,
      });
      expect(entry.status).toBe(303);
      if (i === 1) mark = /^"v1(\.[0-9a-f]+)"$/.exec(etagOf(await formOn(jar, voice, voice)))![1]!;
    }
    for (const history of [`${voice}/history`, `/accounts/${owner}/glossary/history`]) {
      const html = await (await jar.fetch(`${service.url}${history}`)).text();
      const listed = [...html.matchAll(/<tr><td>(\d+)<\/td>/g)].map((m) => Number(m[1]));
      expect(listed[0], history).toBe(102);
      expect(listed, history).toHaveLength(100);
      expect(html, history).toContain('The newest 100 of 102 versions.');
      expect(html, history).toMatch(/<select id="f-from" name="from">[\s\S]*?<option value="101" selected>/);
      expect(html, history).toMatch(/<select id="f-to" name="to">[\s\S]*?<option value="102" selected>/);
    }
  });
});

describe('the tokens page', () => {
  it('lists every token, the newest first, past the first hundred', { timeout: 120_000 }, async () => {
    const owner = uniqueHandle('tok');
    const jar = await signedIn(owner);
    const csrf = csrfOf(await formOn(jar, '/settings/tokens', '/settings/tokens'));
    for (let i = 1; i <= 101; i++) {
      const created = await postForm(jar, `${service.url}/settings/tokens`, {
        csrf,
        name: `ci ${i}`,
        scopes: 'project:read',
        expiresInDays: '5',
      });
      expect(created.status).toBe(303);
      expect(created.headers.get('location')).toBe('/settings/tokens/created');
      if (i > 1) continue;
      // The page the form leads to shows the secret once; opened again, it shows none and creates nothing.
      const shown = await (await jar.fetch(`${service.url}/settings/tokens/created`)).text();
      expect(shown).toMatch(/<input type="text" class="secret" id="token-secret" readonly [^>]*value="l10n_/);
      const again = await jar.fetch(`${service.url}/settings/tokens/created`);
      expect(again.status).toBe(303);
      expect(again.headers.get('location')).toMatch(/^\/settings\/tokens\?notice=/);
    }
    const html = await (await jar.fetch(`${service.url}/settings/tokens`)).text();
    const listed = [...html.matchAll(/<h3 id="token-[^"]+">(ci \d+) /g)].map((m) => m[1]);
    expect(listed).toHaveLength(101);
    expect(listed[0]).toBe('ci 101');
    // The newest one can be revoked from the page.
    expect(html).toContain('Yes, revoke <bdi>ci 101</bdi></button>');
  });
});

describe('first saves sent at once', () => {
  it('of the voice and the glossary: one is saved, the others are told someone saved meanwhile', async () => {
    const owner = uniqueHandle('fst');
    const jar = await signedIn(owner);
    const voice = `/accounts/${owner}/voice`;
    const entries = `/accounts/${owner}/glossary/entries`;
    const csrf = csrfOf(await formOn(jar, voice, voice));
    // The page checked that nothing was saved and then saved without a condition: two of four such forms
    // sent at once were both "saved", the second replacing a first version its author never saw.
    const post = (path: string, fields: Record<string, string>) => ({
      url: `${service.url}${path}`,
      method: 'POST',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, etag: '', ...fields }).toString(),
    });
    for (const [path, fields, table] of [
      [
        voice,
        (i: number) => ({ tone: `tone ${i}`, formality: 'neutral', localeOverrides: '{}' }),
        'voice_versions',
      ],
      [entries, (i: number) => ({ term: `term ${i}` }), 'glossary_versions'],
    ] as const) {
      const answers = await burstFromAnotherProcess([0, 1, 2, 3].map((i) => post(path, fields(i))));
      expect(answers.map((answer) => answer.status).sort(), path).toEqual([303, 412, 412, 412]);
      const versions = await sql(
        service,
        `select v.version from ${table} v join accounts a on a.id = v.account_id where a.handle = $1`,
        [owner],
      );
      expect(versions, path).toEqual([{ version: 1 }]);
    }
  });
});

/** Posts the voice form of `owner` as the page has it now, with a tone and these locale overrides. */
async function postOverrides(jar: CookieJar, owner: string, localeOverrides: string) {
  const voice = `/accounts/${owner}/voice`;
  const form = await formOn(jar, voice, voice);
  return postForm(jar, `${service.url}${voice}`, {
    csrf: csrfOf(form),
    etag: etagOf(form),
    tone: 'warm',
    formality: 'neutral',
    localeOverrides,
  });
}

const TWICE = 'is written twice: only the last would be kept. Write it once, with everything it should hold.';

describe('the voice editor', () => {
  it('says where in the locale overrides a problem is, in words a person reads', async () => {
    const owner = uniqueHandle('vjo');
    const jar = await signedIn(owner);
    const cases: [string, string][] = [
      ['{"de": "formal"}', '"de": Write an object: names and values in braces, { … }.'],
      ['{"de": {"tone": 5}}', '"de" → "tone": Write text in double quotes.'],
      ['{"de": {"formality": "very"}}', '"de" → "formality": Use one of "informal", "neutral", "formal".'],
      ['{"de": {"tonne": "warm"}}', '"de" → "tonne": Not a name this takes: leave it out.'],
      ['{"de": {}}', '"de": Fill in at least one entry.'],
      ['["de"]', 'Write an object: names and values in braces, { … }.'],
      ['{"a/b": {"tone": 1}}', '"a/b" → "tone": Write text in double quotes.'],
      // Names written as they were: a slash, a tilde, an empty name.
      ['{"de": {"a/b": "x"}}', '"de" → "a/b": Not a name this takes: leave it out.'],
      ['{"de": {"a~1b": "x"}}', '"de" → "a~1b": Not a name this takes: leave it out.'],
      ['{"de": {"tone": "x", "": "y"}}', '"de" → "": Not a name this takes: leave it out.'],
      // A name written twice: JSON.parse would keep the last and drop the rest unseen.
      ['{"de": {"tone": "a"}, "de": {"formality": "formal"}}', `"de" ${TWICE}`],
      ['{"de": {"tone": "a \\" }, {", "tone": "b"}}', `"de" → "tone" ${TWICE}`],
      ['{"de": {"tone": "x"}, "d\\u0065": {"tone": "y"}}', `"de" ${TWICE}`],
    ];
    for (const [overrides, said] of cases) {
      const refused = await postOverrides(jar, owner, overrides);
      expect(refused.status, overrides).toBe(400);
      const html = await refused.text();
      const error = /<p class="field-error" id="f-localeOverrides-error">([^<]*)<\/p>/.exec(html)?.[1];
      expect(error?.replaceAll('&quot;', '"'), overrides).toBe(said);
    }
    expect(
      await sql(
        service,
        'select count(*)::int as n from voice_versions v join accounts a on a.id = v.account_id where a.handle = $1',
        [owner],
      ),
    ).toEqual([{ n: 0 }]);
  });

  it('says that a field has more problems than it shows', async () => {
    const owner = uniqueHandle('vjm');
    const jar = await signedIn(owner);
    const overrides = JSON.stringify(
      Object.fromEntries([...Array(150)].map((_, i) => [`de-x-b${i}`, { colour: 1 }])),
    );
    const refused = await postOverrides(jar, owner, overrides);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain(
      '150 problems in all: the first 100 are shown. Fix them and save again to see the rest.',
    );
  });

  it('saves the same name in two objects of the overrides', async () => {
    const owner = uniqueHandle('vjd');
    const jar = await signedIn(owner);
    const overrides = '{"de": {"tone": "a {\\"de\\": 1}"}, "fr": {"tone": "b", "formality": "formal"}}';
    expect((await postOverrides(jar, owner, overrides)).status).toBe(303);
    const page = await jar.fetch(`${service.url}/accounts/${owner}/voice`);
    expect(await page.text()).toContain('a {\\&quot;de\\&quot;: 1}');
  });

  it('tells a form built before the first save that someone saved meanwhile, and keeps its text', async () => {
    const owner = uniqueHandle('voi');
    const jar = await signedIn(owner);
    const voice = `/accounts/${owner}/voice`;
    // Two editors opened while nothing is saved: both forms carry no ETag.
    const [first, second] = [await formOn(jar, voice, voice), await formOn(jar, voice, voice)];
    expect(etagOf(first)).toBe('');
    const save = (form: string, tone: string) =>
      postForm(jar, `${service.url}${voice}`, {
        csrf: csrfOf(form),
        etag: etagOf(form),
        tone,
        formality: 'neutral',
        localeOverrides: '{}',
      });
    expect((await save(first, 'Saved first')).status).toBe(303);
    const late = await save(second, 'Typed meanwhile');
    expect(late.status).toBe(412);
    const html = await late.text();
    expect(html).toContain('Someone saved version 1 while you were editing; nothing was saved.');
    expect(html).toContain('value="Typed meanwhile"');
    expect(html).toContain('You and they both changed Tone: yours is shown');
    // The first save is still the voice.
    const now = await (await jar.fetch(`${service.url}${voice}`)).text();
    expect(now).toContain('Version 1,');
    expect(now).toContain('value="Saved first"');
    // The refused form now stands on version 1: sent again, it replaces it knowingly.
    const refused = html.slice(html.indexOf(`action="${voice}"`));
    expect(etagOf(refused)).toMatch(tagPattern('v', 1));
    expect((await save(refused, 'Typed meanwhile')).status).toBe(303);
    expect(await (await jar.fetch(`${service.url}${voice}`)).text()).toContain('value="Typed meanwhile"');
  });

  it('merges a form refused as stale onto the newer version: what the person did not change is not put back', async () => {
    const owner = uniqueHandle('vom');
    const jar = await signedIn(owner);
    const voice = `/accounts/${owner}/voice`;
    const fields = (form: string, changes: Record<string, string>) => ({
      csrf: csrfOf(form),
      etag: etagOf(form),
      tone: 'calm',
      formality: 'neutral',
      guidelines: 'short sentences',
      localeOverrides: '{}',
      ...changes,
    });
    const empty = await formOn(jar, voice, voice);
    expect((await postForm(jar, `${service.url}${voice}`, fields(empty, {}))).status).toBe(303);
    // A and B open version 1; A changes the tone, then B, on the older copy, only the guidelines.
    const [a, b] = [await formOn(jar, voice, voice), await formOn(jar, voice, voice)];
    expect((await postForm(jar, `${service.url}${voice}`, fields(a, { tone: 'warm' }))).status).toBe(303);
    const refused = await postForm(jar, `${service.url}${voice}`, fields(b, { guidelines: 'plain words' }));
    expect(refused.status).toBe(412);
    const html = await refused.text();
    // B's form now shows A's tone and keeps B's guidelines; saved again, neither change is lost.
    expect(html).toContain('value="warm"');
    expect(html).toContain('>\nplain words</textarea>');
    expect(html).not.toContain('both changed');
    const again = html.slice(html.indexOf(`action="${voice}"`));
    const saved = await postForm(jar, `${service.url}${voice}`, {
      csrf: csrfOf(again),
      etag: etagOf(again),
      tone: /name="tone" value="([^"]*)"/.exec(again)![1]!,
      formality: 'neutral',
      guidelines: 'plain words',
      localeOverrides: '{}',
    });
    expect(saved.status).toBe(303);
    const [row] = (await sql(
      service,
      `select v.tone, v.guidelines from voice_versions v join accounts a on a.id = v.account_id
        where a.handle = $1 order by v.version desc limit 1`,
      [owner],
    )) as { tone: string; guidelines: string }[];
    expect(row).toEqual({ tone: 'warm', guidelines: 'plain words' });
  });
});

describe('forms that take codes written in another case', () => {
  it('save country codes in capitals and domains in lower case, as the API takes them', async () => {
    const owner = uniqueHandle('cas');
    const jar = await signedIn(owner);
    const voice = `/accounts/${owner}/voice`;
    const form = await formOn(jar, voice, voice);
    const saved = await postForm(jar, `${service.url}${voice}`, {
      csrf: csrfOf(form),
      etag: etagOf(form),
      tone: 'Plain',
      formality: 'neutral',
      targetCountries: 'de at',
      localeOverrides: '{}',
    });
    expect(saved.status).toBe(303);
    const voicePage = await (await jar.fetch(`${service.url}${voice}`)).text();
    expect(voicePage).toContain('value="DE AT"');
    // The tab says whose voice it is, as the heading does: several accounts' tabs are told apart.
    expect(voicePage).toContain(`<title>Voice of @${owner} · Localization service</title>`);

    const org = `${owner}-org`;
    const created = await postForm(jar, `${service.url}/dashboard/organizations`, {
      csrf: csrfOf(await formOn(jar, '/dashboard', '/dashboard/organizations')),
      handle: org,
      displayName: 'Cases',
      visibility: 'private',
    });
    expect(created.status).toBe(303);
    const action = `/orgs/${org}/sign-in/domains`;
    /** Adds `domain` through the page; the page its TXT value is shown on, once. */
    const addDomain = async (domain: string) => {
      const posted = await postForm(jar, `${service.url}${action}`, {
        csrf: csrfOf(await formOn(jar, `/orgs/${org}/sign-in`, action)),
        domain,
      });
      expect(posted.status, domain).toBe(303);
      const shownAt = new URL(posted.headers.get('location')!, service.url).href;
      expect(shownAt).toBe(`${service.url}/orgs/${org}/sign-in/domains/added`);
      const shown = await jar.fetch(shownAt);
      expect(shown.status, domain).toBe(200);
      return { shownAt, html: await shown.text() };
    };
    const { shownAt, html } = await addDomain('Cases-Example.COM');
    expect(html).toContain('cases-example.com');
    expect(html).toMatch(/l10n-verification=[\w-]+/);
    // Reloading it issues no new value (it posted the form again, and the value shown first, perhaps
    // published already, was no longer the one to publish): the value is shown once.
    const reloaded = await jar.fetch(shownAt);
    expect(reloaded.status).toBe(303);
    expect(new URL(reloaded.headers.get('location')!, service.url).searchParams.get('notice')).toContain(
      'shown once',
    );
    // Internationalised domains, written in Unicode, are claimed in their ASCII (punycode) form, a
    // punycode top-level domain included.
    for (const unicode of [`bücher-${owner}.example`, `пример-${owner}.рф`]) {
      expect((await addDomain(unicode)).html).toContain(domainToASCII(unicode));
    }
    // Text that is no domain name is refused, not read as a URL's host (which claimed another domain);
    // the form shows what was typed, not its punycode.
    for (const typed of [
      'corp.example%41',
      'pasted.example/login?x=1',
      'corp2.example#x',
      'Bücher.Example.',
    ]) {
      const refused = await postForm(jar, `${service.url}${action}`, {
        csrf: csrfOf(await formOn(jar, `/orgs/${org}/sign-in`, action)),
        domain: typed,
      });
      expect(refused.status, typed).toBe(400);
      expect(await refused.text(), typed).toContain(`value="${typed}"`);
    }
    expect(
      await sql(
        service,
        `select domain from organization_domains where domain in ('corp.examplea', 'pasted.example', 'corp2.example')`,
      ),
    ).toEqual([]);
    // "Sign in with your organization" reads a Unicode address too (no organization has this one).
    for (const address of [`a@bücher-x-${owner}.example`, `a@пример-x-${owner}.рф`]) {
      const signIn = await fetch(`${service.url}/signin/org?email=${encodeURIComponent(address)}`);
      expect(signIn.status, address).toBe(404);
      expect(await signIn.text()).toContain('No organization here signs in people with that e-mail domain.');
    }
  });
});

describe('list pages', () => {
  it('go through an account past its first hundred projects a page at a time', {
    timeout: 120_000,
  }, async () => {
    const owner = uniqueHandle('lst');
    const jar = await signedIn(owner);
    const csrf = csrfOf(await formOn(jar, '/dashboard', '/dashboard/projects'));
    for (let i = 1; i <= 101; i++) {
      const created = await postForm(jar, `${service.url}/dashboard/projects`, {
        csrf,
        account: owner,
        handle: `p${i}`,
        name: `Project ${i}`,
        sourceLocale: 'en',
      });
      expect(created.status).toBe(303);
    }
    const projectLinks = (html: string) =>
      html.match(new RegExp(`href="/accounts/${owner}/projects/p\\d+"`, 'g')) ?? [];
    // The dashboard shows the first page and leads to the account's page for the rest.
    const dashboard = await (await jar.fetch(`${service.url}/dashboard`)).text();
    expect(projectLinks(dashboard)).toHaveLength(100);
    expect(dashboard).toContain(`href="/accounts/${owner}">All projects of @${owner}`);
    // The account's page: a hundred, then a link to the next hundred, which holds the 101st.
    const first = await (await jar.fetch(`${service.url}/accounts/${owner}`)).text();
    expect(projectLinks(first)).toHaveLength(100);
    const next = /href="(\/accounts\/[^"?]+\?after=[^"]+)">Next 100 projects/.exec(first)?.[1];
    expect(next).toBeDefined();
    const second = await (await jar.fetch(`${service.url}${next!.replaceAll('&amp;', '&')}`)).text();
    expect(projectLinks(second)).toEqual([`href="/accounts/${owner}/projects/p101"`]);
    expect(second).toContain(`href="/accounts/${owner}">← First projects`);
    expect(second).not.toContain('Next 100 projects');
    // A cursor the service did not hand out is refused, not read as the first page.
    const forged = await jar.fetch(`${service.url}/accounts/${owner}?after=not-a-cursor`);
    expect(forged.status).toBe(400);
  });

  it("page through an organization's members and its invitations each without losing the other's place", {
    timeout: 120_000,
  }, async () => {
    const admin = await createTestUser(service, uniqueHandle('opa'));
    const org = uniqueHandle('opo');
    // 101 members and 101 pending invitations, straight in the database: each list has a second page.
    const orm = await openDatabase(service.database.url);
    try {
      const em = orm.em.fork();
      const creator = await em.findOneOrFail(User, { id: admin.userId });
      const { organization } = createOrganization(em, creator, {
        handle: org,
        displayName: org,
        visibility: 'private',
      });
      for (let i = 1; i <= 100; i++) {
        const { user } = createUserWithAccount(em, { handle: `${org}-m${i}`, displayName: `m${i}` });
        em.create(Membership, { organization, user, role: 'member' });
      }
      for (let i = 1; i <= 101; i++) {
        issueInvitation(em, {
          organization,
          email: `i${i}@example.com`,
          role: 'member',
          invitedById: admin.userId,
        });
      }
      await em.flush();
    } finally {
      await orm.close();
    }
    const jar = await signedIn(admin.handle);
    const page = async (path: string) => {
      const response = await jar.fetch(`${service.url}${path.replaceAll('&amp;', '&')}`);
      expect(response.status).toBe(200);
      return response.text();
    };
    const link = (html: string, label: string) => new RegExp(`<a href="([^"]+)">${label}`).exec(html)?.[1];
    const invitees = (html: string) => html.match(/<td>i\d+@example\.com<\/td>/g) ?? [];
    const memberHandles = (html: string) => html.match(new RegExp(`@${org}-m\\d+</span>`, 'g')) ?? [];

    const first = await page(`/orgs/${org}`);
    // Invitations, second page: the 101st alone.
    const invitationsNext = link(first, 'Next 100 invitations');
    expect(invitationsNext).toBeDefined();
    const secondInvitations = await page(invitationsNext!);
    expect(invitees(secondInvitations)).toHaveLength(1);
    // From there, the members' next page keeps the invitations on their second page…
    const membersNext = link(secondInvitations, 'Next 100 members');
    expect(membersNext).toContain('invitations_after=');
    const both = await page(membersNext!);
    expect(memberHandles(both)).toHaveLength(1);
    expect(invitees(both)).toHaveLength(1);
    // …and going back to the first invitations keeps the members on their second page.
    const invitationsFirst = link(both, '← First invitations');
    expect(invitationsFirst).toContain('members_after=');
    const back = await page(invitationsFirst!);
    expect(memberHandles(back)).toHaveLength(1);
    expect(invitees(back)).toHaveLength(100);
  });
});

describe('the diff pages', () => {
  it('show two versions that differ in thousands of words whole, not word by word', async () => {
    // Two long texts that differ in every other word: a word-by-word diff of such texts costs seconds of
    // the event loop (the time grows with the length times the edits), so past a bound of edits the change
    // is shown whole.
    const owner = await createTestUser(service, uniqueHandle('dif'));
    const words = (seed: string) => Array.from({ length: 1250 }, (_, i) => `k${i} ${seed}${i}`).join(' ');
    for (const [seed, note] of [
      ['a', 'first'],
      ['b', 'second'],
    ]) {
      const saved = await fetch(`${service.url}/api/v1/accounts/${owner.handle}/voice`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          tone: 'Friendly',
          formality: 'informal',
          targetAudience: 'Developers',
          guidelines: words(seed!),
          targetCountries: [],
          localeOverrides: {},
          changeNote: note,
        }),
      });
      expect(saved.status, await saved.clone().text()).toBeLessThan(300);
    }
    const jar = await signedIn(owner.handle);
    const page = await jar.fetch(`${service.url}/accounts/${owner.handle}/voice/diff?from=1&to=2`);
    expect(page.status).toBe(200);
    const html = await page.text();
    // Marked for screen readers too: struck-through and underlined text reads like any other.
    const hidden = (text: string) => `<span class="visually-hidden">${text}</span>`;
    expect(html).toContain(`<del>${hidden('[removed: ')}${words('a')}${hidden(']')}</del>`);
    expect(html).toContain(`<ins>${hidden('[added: ')}${words('b')}${hidden(']')}</ins>`);
    // Asked the other way round (From the newer), the page says which version is struck through by its
    // number: it said "the older version" of the newer one.
    const reversed = await (
      await jar.fetch(`${service.url}/accounts/${owner.handle}/voice/diff?from=2&to=1`)
    ).text();
    expect(reversed).toContain(
      'Words only in version 2 are struck through, words only in version 1 underlined.',
    );
    expect(reversed).not.toContain('older version');
  });
});

describe('a taken handle', () => {
  it('is said next to the handle field, with what was typed kept', async () => {
    const owner = uniqueHandle('tkn');
    const jar = await signedIn(owner);
    const csrf = csrfOf(await formOn(jar, '/dashboard', '/dashboard/projects'));
    const create = () =>
      postForm(jar, `${service.url}/dashboard/projects`, {
        csrf,
        account: owner,
        handle: 'dup',
        name: 'Second try',
        sourceLocale: 'en',
      });
    expect((await create()).status).toBe(303);
    const again = await create();
    expect(again.status).toBe(409);
    const html = await again.text();
    expect(html).toMatch(
      /<p class="field-error" id="f-project-handle-error">[^<]*already has a project &quot;dup&quot;/,
    );
    expect(html).toContain('value="Second try"');
    // An organization's handle, on the same page.
    const orgCsrf = csrfOf(await formOn(jar, '/dashboard', '/dashboard/organizations'));
    const taken = await postForm(jar, `${service.url}/dashboard/organizations`, {
      csrf: orgCsrf,
      handle: owner,
      displayName: 'Clash',
      visibility: 'private',
    });
    expect(taken.status).toBe(409);
    expect(await taken.text()).toMatch(/<p class="field-error" id="f-org-handle-error">[^<]*already taken/);
  });
});

describe('the error page', () => {
  it('names what is wrong with an address, not only that something is', async () => {
    const owner = uniqueHandle('err');
    const jar = await signedIn(owner);
    for (const [path, issue] of [
      [`/accounts/${owner}/glossary/diff?from=-1&to=2`, 'version: At least 1.'],
      ['/accounts/NOT-A-HANDLE', 'account: Use lowercase letters'],
    ] as const) {
      const response = await jar.fetch(`${service.url}${path}`);
      expect(response.status, path).toBe(400);
      expect(await response.text(), path).toMatch(new RegExp(`<li>${issue.replace('.', '\\.')}`));
    }
  });
});

describe('names people chose', () => {
  it('are set apart, so a right-to-left override in one cannot turn the handle beside it around', async () => {
    const owner = uniqueHandle('rlo');
    const jar = await signedIn(owner);
    const form = await formOn(jar, '/settings/profile', '/settings/profile');
    const saved = await postForm(jar, `${service.url}/settings/profile`, {
      csrf: csrfOf(form),
      displayName: 'Ada \u202eecalevol',
    });
    expect(saved.status).toBe(303);
    // An organization's name too, which its admins choose and its members read.
    const org = `${owner}-org`;
    const created = await postForm(jar, `${service.url}/dashboard/organizations`, {
      csrf: csrfOf(await formOn(jar, '/dashboard', '/dashboard/organizations')),
      handle: org,
      displayName: 'Acme \u202eelgoog',
      visibility: 'private',
    });
    expect(created.status).toBe(303);
    const page = await (await jar.fetch(`${service.url}/orgs/${org}`)).text();
    expect(page).toContain('<h1><bdi>Acme \u202eelgoog</bdi> <span class="muted">@');
    expect(page).toContain(`<td><bdi>Ada \u202eecalevol</bdi> <span class="muted">@${owner}</span></td>`);
    // And a project's name, wherever it is shown.
    const project = await postForm(jar, `${service.url}/dashboard/projects`, {
      csrf: csrfOf(await formOn(jar, '/dashboard', '/dashboard/projects')),
      account: owner,
      handle: 'rtl',
      name: 'Site \u202eetis',
      sourceLocale: 'en',
    });
    expect(project.status).toBe(303);
    const dashboard = await (await jar.fetch(`${service.url}/dashboard`)).text();
    expect(dashboard).toContain(`<a href="/accounts/${org}"><bdi>Acme \u202eelgoog</bdi></a>`);
    expect(dashboard).toContain('<bdi>Site \u202eetis</bdi></a>');
    for (const path of [
      `/accounts/${owner}`,
      `/accounts/${owner}/projects/rtl`,
      `/accounts/${owner}/projects/rtl/delete`,
    ]) {
      const html = await (await jar.fetch(`${service.url}${path}`)).text();
      // Everywhere but the page's title (text only) and the edit form's field, which hold it as it is.
      const shown = html
        .replaceAll('<bdi>Site \u202eetis</bdi>', '')
        .replace(/<title>[^<]*<\/title>/, '')
        .replaceAll('value="Site \u202eetis"', '');
      expect(shown, path).not.toContain('Site \u202eetis');
    }
  });
});

describe('an invitation link no longer open', () => {
  it('says so first, and why, instead of asking to join', async () => {
    const admin = await createTestUser(service, uniqueHandle('inva'));
    const org = uniqueHandle('invorg');
    await createTestOrganization(service, org, admin);
    const api = (path: string, method: string, body?: unknown) =>
      fetch(`${service.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const created = (await (
      await api(`/organizations/${org}/invitations`, 'POST', { email: 'late@example.com', role: 'member' })
    ).json()) as { id: string; acceptToken: string };
    expect((await api(`/organizations/${org}/invitations/${created.id}`, 'DELETE')).status).toBe(204);
    const jar = await signedIn(uniqueHandle('invb'));
    const html = await (
      await jar.fetch(`${service.url}/invitations/answer?token=${encodeURIComponent(created.acceptToken)}`)
    ).text();
    expect(html).toContain('<title>Invitation no longer open · Localization service</title>');
    expect(html).toContain('<h1>This invitation is no longer open</h1>');
    expect(html).toContain('The organization withdrew it: ask them for a new one.');
    expect(html).not.toContain('action="/invitations/answer"');
  });
});

describe('the voice, for someone who may only read it', () => {
  it('shows every field, the cultural notes and locale overrides included', async () => {
    const admin = await createTestUser(service, uniqueHandle('vra'));
    const org = uniqueHandle('vrorg');
    await createTestOrganization(service, org, admin, { visibility: 'public' });
    const saved = await fetch(`${service.url}/api/v1/accounts/${org}/voice`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        tone: 'warm',
        culturalNotes: 'Avoid idioms about weather.',
        localeOverrides: { 'de-CH': { formality: 'formal' } },
      }),
    });
    expect(saved.status).toBe(201);
    // Anyone signed in reads a public organization's voice, and changes nothing.
    const jar = await signedIn(uniqueHandle('vrb'));
    const html = await (await jar.fetch(`${service.url}/accounts/${org}/voice`)).text();
    expect(html).toContain('Your role lets you read the voice, not change it.');
    expect(html).toContain('Avoid idioms about weather.');
    expect(html).toContain('&quot;de-CH&quot;');
    expect(html).toContain(
      `by @${admin.handle}. <a href="/accounts/${org}/voice/history">History and diffs</a>`,
    );
  });
});

describe('the glossary search', () => {
  it('finds a term typed in another Unicode form, and opens it for editing', async () => {
    const owner = uniqueHandle('gnf');
    const jar = await signedIn(owner);
    expect((await postEntry(jar, owner, { term: 'Café', definition: 'A place' })).status).toBe(303);
    expect((await postEntry(jar, owner, { term: 'Bar', definition: 'Another' })).status).toBe(303);
    // Decomposed, as macOS writes it: the same term.
    const decomposed = encodeURIComponent('Cafe\u0301');
    const found = await (await jar.fetch(`${service.url}/accounts/${owner}/glossary?q=${decomposed}`)).text();
    expect(found).toMatch(/1 of 2 entries match/);
    const edit = await (
      await jar.fetch(`${service.url}/accounts/${owner}/glossary?edit=${decomposed}`)
    ).text();
    expect(edit).toContain('name="original" value="Café"');
  });
});

describe('the models page', () => {
  it('refuses a new API key typed together with "Remove the stored key", changing nothing', async () => {
    const owner = uniqueHandle('mdk');
    const jar = await signedIn(owner);
    const path = `/settings/models?account=${owner}`;
    const page = async () => (await jar.fetch(`${service.url}${path}`)).text();
    const added = await postForm(jar, `${service.url}/settings/models`, {
      csrf: csrfOf(await formOn(jar, path, '/settings/models')),
      account: owner,
      handle: 'main',
      model: 'openai:gpt-4o',
      apiKey: 'sk-first',
    });
    expect(added.status).toBe(303);
    expect(await page()).toContain('<td data-label="API key">set</td>');
    const both = await postForm(jar, `${service.url}/settings/models/main`, {
      csrf: csrfOf(await formOn(jar, path, '/settings/models/main')),
      account: owner,
      apiKey: 'sk-new',
      removeKey: 'on',
    });
    expect(both.status).toBe(400);
    expect(await both.text()).toContain('main: type a new API key or remove the stored one, not both.');
    // The stored key is still there (it was removed, and "saved" said).
    expect(await page()).toContain('<td data-label="API key">set</td>');
  });
});

describe('a public organization, seen from outside and by a member', () => {
  it('says in words what the visitor is, and offers nothing they cannot use', async () => {
    const admin = await createTestUser(service, uniqueHandle('poa'));
    const member = await createTestUser(service, uniqueHandle('pom'));
    const org = uniqueHandle('puborg');
    await createTestOrganization(service, org, admin, { visibility: 'public', members: [member] });

    const outsider = await signedIn(uniqueHandle('pov'));
    const orgPage = await (await outsider.fetch(`${service.url}/orgs/${org}`)).text();
    // Not the policy's role name.
    expect(orgPage).toContain(`Acting on <strong>@${org}</strong> as a reader (the account is public)`);
    expect(orgPage).not.toContain('public_account');
    // The members list is for members: said, rather than an empty table.
    expect(orgPage).toContain(`Only members of @${org} see who its members are.`);
    expect(orgPage).not.toContain('<th scope="col">Member</th>');
    expect(orgPage).not.toContain('The last admin cannot leave');
    const accountPage = await (await outsider.fetch(`${service.url}/accounts/${org}`)).text();
    expect(accountPage).toContain('No projects yet.');
    expect(accountPage).not.toContain('Create one on the dashboard');
    // Its glossary is not theirs to read: said so, not shown as an empty glossary they may read.
    const glossary = await outsider.fetch(`${service.url}/accounts/${org}/glossary`);
    expect(glossary.status).toBe(404);
    const refusal = await glossary.text();
    expect(refusal).toContain('Nothing to show in');
    expect(refusal).not.toContain('No glossary saved yet');

    // A member sees the members, may leave, and is not told what only concerns the last admin.
    const memberPage = await (
      await (await signedIn(member.handle)).fetch(`${service.url}/orgs/${org}`)
    ).text();
    expect(memberPage).toContain(`as member</p>`);
    expect(memberPage).toContain('<th scope="col">Member</th>');
    expect(memberPage).toContain(`<summary>Leave <bdi>@${org}</bdi></summary>`);
    expect(memberPage).not.toContain('The last admin cannot leave');
    // The admin is.
    const adminPage = await (await (await signedIn(admin.handle)).fetch(`${service.url}/orgs/${org}`)).text();
    expect(adminPage).toContain('The last admin cannot leave');
  });
});

describe('a translation line the glossary form cannot read', () => {
  it('is named, with what was typed kept, rather than told to fill in a field that is filled', async () => {
    const owner = uniqueHandle('gtl');
    const jar = await signedIn(owner);
    const refused = await postEntry(jar, owner, {
      term: 'workspace',
      definition: 'Where work happens',
      translations: 'de = Arbeitsbereich\nno equals sign here',
    });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain('Line 2 is not &quot;locale = translation&quot;');
    expect(html).not.toContain('Fill this in.');
    expect(html).toContain('no equals sign here</textarea>');
    // A line that goes on the translation above it, indented, is one.
    const saved = await postEntry(jar, owner, {
      term: 'workspace',
      definition: 'Where work happens',
      translations: 'de = Arbeitsbereich\n  über zwei Zeilen',
    });
    expect(saved.status).toBe(303);
  });
});
