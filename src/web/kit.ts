// The page toolkit: templates (Eta, escaping by default; see docs/web.md for why Eta), the signed-in
// person of a request, CSRF on every form, the web door into the pipeline, and the mapping of a
// problem's JSON pointers to the form fields they name. Every page module builds on these few functions.
import { fileURLToPath } from 'node:url';
import { Eta } from 'eta';
import express, { type Request, type RequestHandler, type Response } from 'express';
import type { OperationResponse, Pipeline } from '../api/pipeline.ts';
import type { ServiceContext } from '../context.ts';
import type { Sessions, SignedIn } from '../identity/sessions.ts';
import { STYLESHEET_URL } from './assets.ts';
import type { Csrf } from './csrf.ts';
import { type WebCall, webCaller } from './door.ts';
import { SIGNOUT_CSRF_PURPOSE } from './sign-in/routes.ts';

const VIEWS = fileURLToPath(new URL('./views', import.meta.url));
/** CSRF purpose of every form of the web pages; tokens are bound to the browser session's id. */
const FORM_CSRF_PURPOSE = 'web-form';

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
 * A failed operation's problem as a form sees it: messages by field (the pointer /body/name → "name",
 * /body/entries/3/term → "entries.3.term", /params/x → "x") and the rest as one message for the form.
 */
/** The schema validator's wording, said for a person filling in a form; other messages pass as they are. */
const PLAIN: [RegExp, string][] = [
  [/^must NOT have fewer than 1 characters$/, 'Fill this in.'],
  [/^must NOT have fewer than (\d+) characters$/, 'Use at least $1 characters.'],
  [/^must NOT have more than (\d+) characters$/, 'Use at most $1 characters.'],
  [/^must NOT have fewer than 1 items$/, 'Choose at least one.'],
  [/^must NOT have more than (\d+) items$/, 'Choose at most $1.'],
  [/^must be <= (\d+)$/, 'At most $1.'],
  [/^must be >= (\d+)$/, 'At least $1.'],
  [/^must be integer$/, 'Enter a whole number.'],
  [/^must match format "email"$/, 'Enter an e-mail address.'],
  [/^must match format "uri"$/, 'Enter a full URL, such as https://example.com/v1.'],
  [/^must match pattern /, 'This is not in the expected form.'],
  [/^must be equal to one of the allowed values$/, 'Choose one of the offered values.'],
];
const plain = (message: string) => {
  for (const [pattern, replacement] of PLAIN)
    if (pattern.test(message)) return message.replace(pattern, replacement);
  return message;
};

export function formErrors(response: OperationResponse): { fields: FieldErrors; form: string[] } {
  const body = (response.body ?? {}) as { detail?: string; errors?: { pointer: string; message: string }[] };
  const fields: FieldErrors = {};
  const form: string[] = [];
  for (const issue of body.errors ?? []) {
    const key = issue.pointer.replace(/^\/(body|params|query)\/?/, '').replaceAll('/', '.');
    if (key === '') form.push(plain(issue.message));
    else fields[key] ??= plain(issue.message);
  }
  if (Object.keys(fields).length === 0 && form.length === 0) form.push(body.detail ?? 'That did not work.');
  return { fields, form };
}

/** The message for a field, or for any part of it (targetLocales.1 belongs to targetLocales). */
function errorFor(fields: FieldErrors | undefined, name: string): string | undefined {
  if (!fields) return undefined;
  if (fields[name]) return fields[name];
  const key = Object.keys(fields).find((k) => k.startsWith(`${name}.`));
  return key ? fields[key] : undefined;
}

export const isOk = (r: OperationResponse) => r.status >= 200 && r.status < 300;

export function createKit(deps: WebDeps) {
  const { pipeline, sessions, csrf } = deps;
  const eta = new Eta({ views: VIEWS, cache: true, autoEscape: true });
  const formBody = express.urlencoded({ extended: false, limit: '2mb', parameterLimit: 20000 });

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

  function render(
    res: Response,
    pc: PageContext | undefined,
    view: string,
    data: LayoutData & Record<string, unknown>,
    status = 200,
  ) {
    // The Content-Security-Policy is the service-wide one helmet sets (src/lib/csp.ts).
    res.set('Cache-Control', 'no-store');
    res
      .status(status)
      .type('html')
      .send(
        eta.render(view, {
          ...data,
          errorFor,
          stylesheet: STYLESHEET_URL,
          user: pc?.userHandle,
          csrf: pc?.csrf,
          signoutCsrf: pc?.signoutCsrf,
        }),
      );
  }

  /** The page for a failed operation that is not a form's fault: 403, 404, 409, or anything else. */
  function problemPage(res: Response, pc: PageContext, response: OperationResponse) {
    const body = (response.body ?? {}) as { title?: string; detail?: string };
    const status = response.status >= 400 ? response.status : 500;
    const title =
      status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : (body.title ?? 'Something went wrong');
    render(res, pc, 'problem', { title, detail: body.detail ?? '', status }, status);
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

  return { page, action, render, problemPage, eta };
}

export type Kit = ReturnType<typeof createKit>;

/** A form field's text, or '' (forms send strings; anything else is treated as absent). */
export function text(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
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
