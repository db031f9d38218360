// The page toolkit: templates (Eta, escaping by default; see docs/web.md for why Eta), the signed-in
// person of a request, CSRF on every form, the web door into the pipeline, and the mapping of a
// problem's JSON pointers to the form fields they name. Every page module builds on these few functions.
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { OperationResponse, Pipeline } from '../api/pipeline.ts';
import type { ProblemBody } from '../api/problem.ts';
import type { ServiceContext } from '../context.ts';
import type { Sessions, SignedIn } from '../identity/sessions.ts';
import { requireUtf8Form } from '../lib/utf8-body.ts';
import { STYLESHEET_URL } from './assets.ts';
import type { Csrf } from './csrf.ts';
import { type WebCall, webCaller } from './door.ts';
import { SIGNOUT_CSRF_PURPOSE } from './sign-in/routes.ts';

const VIEWS = fileURLToPath(new URL('./views', import.meta.url));
/** CSRF purpose of every form of the web pages; tokens are bound to the browser session's id. */
const FORM_CSRF_PURPOSE = 'web-form';
/** Purpose of the signature a notice in a page's URL carries (see withNotice). */
const NOTICE_PURPOSE = 'web-notice';

export interface WebDeps {
  ctx: ServiceContext;
  pipeline: Pipeline;
  sessions: Sessions;
  csrf: Csrf;
}

/** What a page handler gets: the person, operations to call as them, and the tokens their forms carry. */
export interface PageContext {
  who: SignedIn;
  call: WebCall;
  /** The person's personal account handle (shown in the header). */
  userHandle: string;
  csrf: string;
  signoutCsrf: string;
}

export interface Crumb {
  href?: string;
  label: string;
}

/** Data every page template gets through the layout. */
export interface LayoutData {
  title: string;
  /** Which top navigation entry is current. */
  section?: 'dashboard' | 'tokens' | 'apps' | 'models' | 'profile';
  crumbs?: Crumb[];
  /** The account the page acts on, with the person's role there. */
  acting?: { handle: string; role: string | null };
  notice?: string;
}

export type FieldErrors = Record<string, string>;

/**
 * What a field whose value does not match its pattern in openapi.yaml should be, said as a sentence: the
 * validator's message names the pattern itself, which means nothing to a person filling in a form. Keyed
 * by the pattern as the document spells it; a pattern missing here gets the general sentence.
 */
const PATTERNS: Record<string, string> = {
  '^https?://': 'Start with http:// or https://.',
  '^[a-z0-9][a-z0-9._-]*:\\S+$': 'Write the provider and the model as provider:model, such as openai:gpt-4o.',
  '^[a-z][a-z0-9-]{0,37}[a-z0-9]$':
    'Use lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen.',
  '^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$': 'Enter a language tag, such as de or de-CH.',
  '^[A-Z]{2}$': 'Enter a two-letter country code in capitals, such as DE.',
  '^\\S+$': 'Leave out spaces.',
  '^\\S(.*\\S)?$': 'Leave out spaces at the start and at the end.',
  '^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}$':
    'Enter a lowercase domain name, such as example.com.',
};

/** The schema validator's wording, said for a person filling in a form; other messages pass as they are. */
const PLAIN: [RegExp, string | ((...groups: string[]) => string)][] = [
  [/^must NOT have fewer than 1 characters$/, 'Fill this in.'],
  [/^must NOT have fewer than (\d+) characters$/, 'Use at least $1 characters.'],
  [/^must NOT have more than (\d+) characters$/, 'Use at most $1 characters.'],
  [/^must NOT have fewer than 1 items$/, 'Choose at least one.'],
  [/^must NOT have more than (\d+) items$/, 'Choose at most $1.'],
  // Objects a form fills are keyed lists (translations and overrides by locale): "properties" are entries.
  [/^must NOT have fewer than 1 properties$/, 'Fill in at least one entry.'],
  [/^must NOT have more than (\d+) properties$/, 'Use at most $1 entries.'],
  [/^must be <= (\d+)$/, 'At most $1.'],
  [/^must be >= (\d+)$/, 'At least $1.'],
  [/^must be integer$/, 'Enter a whole number.'],
  [/^must match format "email"$/, 'Enter an e-mail address.'],
  [/^must match format "uri"$/, 'Enter a full URL, such as https://example.com/v1.'],
  // An id in a page's address (a link edited by hand): nothing a person typed.
  [/^must match format "uuid"$/, 'This address names nothing here: its id is not one this service makes.'],
  [/^must match pattern "(.*)"$/s, (pattern) => PATTERNS[pattern] ?? 'This is not in the expected form.'],
  [/^must be one of .*$/s, 'Choose one of the offered values.'],
  [/^must NOT have duplicate items.*$/s, 'A value is listed twice: list each once.'],
  [/^must not be blank$/, 'Fill this in.'],
];
const plain = (message: string) => {
  for (const [pattern, replacement] of PLAIN) {
    const match = pattern.exec(message);
    if (!match) continue;
    return typeof replacement === 'string'
      ? message.replace(pattern, replacement)
      : replacement(...match.slice(1));
  }
  return message;
};

/** The validator's wording for a part of JSON a person typed, said with JSON's own words. */
const JSON_PLAIN: [RegExp, string][] = [
  [/^must be object$/, 'Write an object: names and values in braces, { … }.'],
  [/^must be array$/, 'Write a list in square brackets, [ … ].'],
  [/^must be string$/, 'Write text in double quotes.'],
  [/^must be boolean$/, 'Write true or false.'],
  [/^must be one of (.*)$/s, 'Use one of $1.'],
  [/^must NOT have additional properties$/, 'Not a name this takes: leave it out.'],
];

/**
 * A problem inside a field whose text is JSON (the voice's locale overrides), said with where in that JSON
 * it is: `"de" → "tone": Write text in double quotes.` The field shows one text, so without the place a
 * message such as "must be string" named nothing the person could find.
 */
function jsonProblem(pointer: string, message: string): string {
  // Every segment after the leading slash, an empty one (an empty name) included; unescaped as RFC 6901 says.
  const path = (pointer === '' ? [] : pointer.split('/').slice(1)).map((part) =>
    part.replaceAll('~1', '/').replaceAll('~0', '~'),
  );
  const rule = JSON_PLAIN.find(([pattern]) => pattern.test(message));
  const said = rule ? message.replace(rule[0], rule[1]) : plain(message);
  return path.length > 0 ? `${jsonPlace(path)}: ${said}` : said;
}

/** Where in JSON a person typed something is, by the names leading to it: `"de" → "tone"`. */
export const jsonPlace = (names: readonly string[]): string =>
  names.map((name) => JSON.stringify(name)).join(' → ');

/**
 * A failed operation's problem as a form sees it: messages by field (the pointer /body/name → "name",
 * /body/entries/3/term → "entries.3.term", /params/x → "x") and the rest as one message for the form.
 * A problem inside one of `jsonFields` (fields whose text is JSON) is that field's, naming where it is.
 */
export function formErrors(
  response: OperationResponse,
  jsonFields: readonly string[] = [],
): { fields: FieldErrors; form: string[] } {
  const body = (response.body ?? {}) as ProblemBody;
  const fields: FieldErrors = {};
  const form: string[] = [];
  for (const issue of body.errors ?? []) {
    const pointer = issue.pointer.replace(/^\/(body|params|query)/, '');
    const json = jsonFields.find((field) => pointer === `/${field}` || pointer.startsWith(`/${field}/`));
    if (json) {
      // Every problem of the JSON, one after another: the field shows one text, and fixing the first only
      // to be told of the next sent the person back and forth.
      const said = jsonProblem(pointer.slice(json.length + 1), issue.message);
      fields[json] = fields[json] ? `${fields[json]} ${said}` : said;
      continue;
    }
    const key = pointer.replace(/^\//, '').replaceAll('/', '.');
    if (key === '') form.push(plain(issue.message));
    else fields[key] ??= plain(issue.message);
  }
  if (Object.keys(fields).length === 0 && form.length === 0) form.push(body.detail ?? 'That did not work.');
  // The API lists the first hundred problems of a request: the person hears that there are more.
  if (body.errorCount !== undefined && body.errors) {
    form.push(
      `${body.errorCount} problems in all: the first ${body.errors.length} are shown. Fix them and save again to see the rest.`,
    );
  }
  return { fields, form };
}

/**
 * A form sent back with what is wrong with it: the browser puts the focus on the first problem as the page
 * loads (the first field marked invalid, whose label and message a screen reader then reads, or the form's
 * own error box, or the page's notice saying why), so that nobody has to hunt for what failed, and the page
 * scrolls to it on a long page. field.eta, form-errors.eta and the layout's notice of a refused form are what
 * mark problems (aria-invalid, data-form-error), so their markers are what this looks for.
 */
function focusFirstError(html: string): string {
  const marker = /<[a-z]+\b[^>]*?(?: aria-invalid="true"| data-form-error)/.exec(html);
  if (!marker) return html;
  const at = marker.index + marker[0].length;
  return `${html.slice(0, at)} autofocus${html.slice(at)}`;
}

/** The message for a field, or for any part of it (targetLocales.1 belongs to targetLocales). */
function errorFor(fields: FieldErrors | undefined, name: string): string | undefined {
  if (!fields) return undefined;
  if (fields[name]) return fields[name];
  const key = Object.keys(fields).find((k) => k.startsWith(`${name}.`));
  return key ? fields[key] : undefined;
}

export const isOk = (r: OperationResponse) => r.status >= 200 && r.status < 300;

/** A list's position as a "Next" link carried it; anything else (absent, empty, repeated) is its start. */
export const isCursor = (cursor: unknown): cursor is string => typeof cursor === 'string' && cursor !== '';

/**
 * One page of a list operation (100 items, in the API's order) starting at `cursor`, the `nextCursor` of
 * the page before as a "More" link carried it (anything but a string is the first page); `next` is the
 * cursor of the page after, when there is one. Pages of long lists (an account's projects, an
 * organization's members) go a page at a time, so that a page costs the same however long the list is.
 */
export async function listPage<T>(
  call: WebCall,
  operationId: string,
  input: { params?: Record<string, string>; query?: Record<string, unknown> },
  cursor: unknown,
): Promise<{ items: T[]; next?: string } | { failed: OperationResponse }> {
  const query: Record<string, unknown> = {
    ...input.query,
    limit: 100,
    ...(isCursor(cursor) ? { cursor } : {}),
  };
  const r = await call(operationId, { ...input, query });
  if (!isOk(r)) return { failed: r };
  const body = r.body as { items: T[]; nextCursor?: string | null };
  return { items: body.items, ...(body.nextCursor ? { next: body.nextCursor } : {}) };
}

/**
 * Every item of a paginated list operation, in the API's order (oldest first), following `nextCursor`
 * page by page (100 items, the most a page holds); or the first failed response. For lists a person's own
 * activity bounds (their tokens, a resource's versions shown newest first); longer ones go by listPage.
 */
export async function allItems<T>(
  call: WebCall,
  operationId: string,
  input: { params?: Record<string, string>; query?: Record<string, unknown> } = {},
): Promise<{ items: T[] } | { failed: OperationResponse }> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPage<T>(call, operationId, input, cursor);
    if ('failed' in page) return page;
    items.push(...page.items);
    cursor = page.next;
  } while (cursor);
  return { items };
}

/** Versions a history page lists, the newest first; any two can still be compared by number. */
const HISTORY_SHOWN = 100;

/**
 * A history page's versions (voice, glossary): the newest HISTORY_SHOWN, newest first, and how many there
 * are in all. The API lists the oldest first, so the newest are on its last page.
 */
export async function newestVersions<T>(
  call: WebCall,
  operationId: string,
  account: string,
): Promise<{ versions: T[]; total: number } | { failed: OperationResponse }> {
  const all = await allItems<T>(call, operationId, { params: { account } });
  if ('failed' in all) return all;
  return { versions: all.items.slice(-HISTORY_SHOWN).toReversed(), total: all.items.length };
}

export function createKit(deps: WebDeps) {
  const { pipeline, sessions, csrf } = deps;
  const eta = new Eta({ views: VIEWS, cache: true, autoEscape: true });
  const formBody = express.urlencoded({
    extended: false,
    limit: '2mb',
    parameterLimit: 20000,
    verify: requireUtf8Form,
  });

  async function context(req: Request, who: SignedIn): Promise<PageContext> {
    const call = webCaller(pipeline, req, who);
    const user = await call('getCurrentUser');
    const handle = (user.body as { handle?: string } | undefined)?.handle ?? '';
    return {
      who,
      call,
      userHandle: handle,
      csrf: csrf.token(FORM_CSRF_PURPOSE, who.sessionId),
      signoutCsrf: csrf.token(SIGNOUT_CSRF_PURPOSE, who.sessionId),
    };
  }

  /**
   * Sends a page. Without `status`, the status already set on `res` stays (200 unless a handler set
   * another): a handler that said res.status(404) first must not get its page answered as 200.
   */
  function render(
    res: Response,
    pc: PageContext | undefined,
    view: string,
    data: LayoutData & Record<string, unknown>,
    status?: number,
  ) {
    // The Content-Security-Policy is the service-wide one helmet sets (src/lib/csp.ts).
    res.set('Cache-Control', 'no-store');
    const code = status ?? res.statusCode;
    // A form sent and refused (every form posts); a page asked for with GET that answers 404 is no form's.
    const refusedForm = code >= 400 && view !== 'problem' && res.req.method === 'POST';
    const html = eta.render(view, {
      ...data,
      title: refusedForm ? `Error: ${data.title}` : data.title,
      // Its notice, if it has one, says why: an alert that takes the focus, not a polite status.
      refused: refusedForm,
      errorFor,
      stylesheet: STYLESHEET_URL,
      user: pc?.userHandle,
      csrf: pc?.csrf,
      signoutCsrf: pc?.signoutCsrf,
    });
    res
      .status(code)
      .type('html')
      .send(refusedForm ? focusFirstError(html) : html);
  }

  /**
   * The page for a failed operation that is not a form's fault: 403, 404, 409, or anything else. The
   * problem's headers go with it, as at the REST door: Retry-After on a 503 (the database went away after
   * the session check), WWW-Authenticate if any.
   */
  function problemPage(res: Response, pc: PageContext, response: OperationResponse) {
    const body = (response.body ?? {}) as { title?: string; detail?: string };
    const status = response.status >= 400 ? response.status : 500;
    // A success's headers (an ETag) do not describe the error page made of it.
    if (response.status >= 400) {
      for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, value);
    }
    const title =
      status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : (body.title ?? 'Something went wrong');
    // What the validator found, by name (a link's `from` that is not a number): the detail alone only
    // says "see errors".
    const { fields, form } = formErrors(response);
    const issues = [...Object.entries(fields).map(([name, message]) => `${name}: ${message}`), ...form];
    const detail = body.detail ?? '';
    render(res, pc, 'problem', { title, detail, issues: issues.filter((i) => i !== detail), status }, status);
  }

  /**
   * `path` with a notice for the page it leads to: where a successful form POST sends the person
   * (post/redirect/get), saying what was done. The page shows a notice only when its signature checks out,
   * so a link from someone else cannot put their words in the page's status box. Signed rather than a
   * table of fixed keys because several notices name what was acted on (a version number, a member, a
   * domain, a model): as plain data in the URL, anyone could choose those for a link they send. The text
   * is not secret (the person just did it), so an HMAC is enough; made with the CSRF helper (COOKIE_KEYS,
   * any configured key verifies) and bound to the browser session, it is valid for this person only.
   */
  function withNotice(pc: PageContext, path: string, notice: string): string {
    const signature = csrf.token(NOTICE_PURPOSE, `${pc.who.sessionId}\0${notice}`);
    const query = new URLSearchParams({ notice, sig: signature });
    return `${path}${path.includes('?') ? '&' : '?'}${query}`;
  }

  /** The notice in this page's URL, if this service wrote it for this session (withNotice); else none. */
  function noticeOf(req: Request, pc: PageContext): string | undefined {
    const { notice, sig } = req.query;
    if (typeof notice !== 'string') return undefined;
    return csrf.verify(NOTICE_PURPOSE, `${pc.who.sessionId}\0${notice}`, sig) ? notice : undefined;
  }

  /** A GET page for a signed-in person; anyone else goes to sign-in and comes back here. */
  function page(handler: (req: Request, res: Response, pc: PageContext) => Promise<void>): RequestHandler {
    return async (req, res) => {
      const who = await sessions.require(req, res, req.originalUrl);
      if (!who) return;
      await handler(req, res, await context(req, who));
    };
  }

  /**
   * A form POST: parses the body (URL-encoded unless another parser is given: file uploads), and answers
   * 403 unless the browser is signed in and the form carries this session's CSRF token. Handlers end in a
   * redirect (post/redirect/get) or re-render with errors.
   */
  function action(
    handler: (req: Request, res: Response, pc: PageContext) => Promise<void>,
    parser: RequestHandler = formBody,
  ): RequestHandler[] {
    return [
      parser,
      async (req, res) => {
        const who = await sessions.current(req);
        if (!who || !csrf.verify(FORM_CSRF_PURPOSE, who.sessionId, req.body?.csrf)) {
          const detail =
            'This form expired or did not come from this site. Sign in again and retry from the page.';
          render(res, undefined, 'problem', { title: 'Not allowed', status: 403, detail }, 403);
          return;
        }
        await handler(req, res, await context(req, who));
      },
    ];
  }

  return { page, action, render, problemPage, withNotice, noticeOf, eta };
}

export type Kit = ReturnType<typeof createKit>;

/** A form field's text, or '' (forms send strings; anything else is treated as absent). */
export function text(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/**
 * A textarea's text. Browsers send every line break in a textarea as CRLF (HTML's form submission), so a
 * text saved with LF (by the API, a CSV import or an earlier save) would come back with CRLF however little
 * the person changed: LF again, as it was.
 */
export const multiline = (body: unknown, name: string): string => asShown(text(body, name));

/** A stored text as a page gives it back: every line break read as LF. */
export const asShown = (stored: string): string => stored.replace(/\r\n?/g, '\n');

/**
 * A text field of an edit form: the stored text itself when the form gives it back as the page showed it,
 * else what was sent (its line breaks as LF). A browser changes a text nobody touched: a CR or CRLF saved by
 * the API or a CSV import comes back as LF (HTML reads every line break of a page as LF), so a form saved
 * for another field would rewrite it. (A one-line field holding a line break is shown as a text area by the
 * `field` partial: a text input would drop its line breaks altogether.)
 */
export function edited(body: unknown, name: string, stored: string | null | undefined): string {
  const sent = multiline(body, name);
  return stored != null && sent === asShown(stored) ? stored : sent;
}

/** A multi-valued form field (checkboxes, multi-selects) as strings. */
export function list(body: unknown, name: string): string[] {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (Array.isArray(value)) return value.map(String);
  return typeof value === 'string' ? [value] : [];
}

/** "de, fr  it" → ["de", "fr", "it"]: the locale and country lists people type. */
export function words(value: string): string[] {
  return value
    .split(/[\s,]+/)
    .map((w) => w.trim())
    .filter(Boolean);
}

export const pathOf = (...parts: string[]) => `/${parts.map(encodeURIComponent).join('/')}`;
