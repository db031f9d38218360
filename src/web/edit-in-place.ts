// Edit forms of what several people change in place (a project, an organization). The form carries the
// ETag it was built on and the values it showed (`base`); a save sends only the fields the person changed,
// with If-Match. Two people editing different fields both keep their change, and a field both changed is
// never replaced unseen: the form comes back merged, saying whose is shown.
import { namesForWrite, sameResource } from '../api/etag.ts';
import type { OperationResponse } from '../api/pipeline.ts';
import { asShown, type FieldErrors, formErrors, isOk, text } from './kit.ts';

/** The longest If-Match the API takes (openapi.yaml). */
const MAX_TAG_LENGTH = 200;
/** A tag of no revision: as a precondition it never holds. */
export const NO_REVISION = '"?"';

/** A form's fields as text, the way the page shows and the browser sends them. */
export type FormValues = Record<string, string>;

/** What an edit form carries besides its fields: the tag it was built on and what it showed. */
export interface FormBase<V extends FormValues> {
  etag: string;
  base: V;
}

/** The hidden fields of an edit form built on `values` at `etag` (the `edit-base` partial renders them). */
function formBase<V extends FormValues>(values: V, etag: string): { etag: string; base: string } {
  // Encoded, not as hidden fields of their own: a browser rewrites line breaks in what it sends back, and
  // the base must be the stored text byte for byte to tell what the person changed.
  return { etag, base: Buffer.from(JSON.stringify(values)).toString('base64url') };
}

/**
 * The ETag a form sent back (empty: none). One no header could carry (longer than any this service writes,
 * or with a control character: a tampered form) is still a tag, matching nothing: the API would refuse the
 * header itself, and that refusal names no field of the form.
 */
export function readFormEtag(body: unknown): string {
  const sent = text(body, 'etag');
  return sent.length <= MAX_TAG_LENGTH && /^[\x20-\x7e]*$/.test(sent) ? sent : NO_REVISION;
}

/**
 * An edit form as its view renders it: the form shown again (`shown`), or a fresh one of `values` at `etag`;
 * with the hidden fields of what it is built on.
 */
export function editFormView<V extends FormValues>(shown: EditForm<V> | undefined, values: V, etag: string) {
  const form = shown ?? { values, etag, base: values };
  return { fields: {}, form: [], ...form, ...formBase(form.base, form.etag) };
}

/** The base a form sent back; a missing or mangled one is none (the save then compares with what is stored). */
export function readFormBase<V extends FormValues>(body: unknown, fields: readonly (keyof V & string)[]) {
  const etag = readFormEtag(body);
  try {
    const decoded = JSON.parse(Buffer.from(text(body, 'base'), 'base64url').toString('utf8')) as unknown;
    if (
      decoded &&
      typeof decoded === 'object' &&
      fields.every((f) => typeof (decoded as V)[f] === 'string')
    ) {
      return { etag, base: decoded as V };
    }
  } catch {}
  return { etag, base: undefined };
}

/** Whether two texts of a field say the same, as a person reads them (line breaks and outer spaces aside). */
const samish = (a: string, b: string) => asShown(a).trim() === asShown(b).trim();
/** Whether two texts are the same, byte for byte. */
const exact = (a: string, b: string) => a === b;

/**
 * A form refused as stale, merged onto what is stored now: a field the person left as the form showed it
 * takes the current value, a field they changed keeps theirs. `both` names the fields the two changed,
 * each in their own way. `same` tells texts apart: as a person reads them by default (the voice form shows
 * its fields reformatted), byte for byte for forms that give back the stored text itself (kit.edited).
 */
export function mergeStale<V extends FormValues>(
  typed: V,
  base: V,
  current: V,
  fields: readonly (keyof V & string)[],
  same: (a: string, b: string) => boolean = samish,
): { values: V; both: (keyof V & string)[] } {
  const values = { ...typed };
  const both: (keyof V & string)[] = [];
  for (const field of fields) {
    if (same(typed[field]!, base[field]!)) values[field] = current[field]!;
    else if (!same(current[field]!, base[field]!) && !same(current[field]!, typed[field]!)) both.push(field);
  }
  return { values, both };
}

/** A form as it is shown again: its values, and the revision and values it is built on. */
interface Shown<V extends FormValues> {
  values: V;
  etag: string;
  base: V;
}

export type InPlaceOutcome<V extends FormValues> =
  | { kind: 'saved'; response: OperationResponse }
  | { kind: 'unchanged' }
  /**
   * Refused for what was typed (400, 409) or for another reason: the response says which, and `form` is
   * the form to show again. `meanwhile`: the refusal came on top of a newer revision someone saved
   * meanwhile, which the form shows from now on.
   */
  | { kind: 'refused'; response: OperationResponse; form?: Shown<V>; meanwhile?: boolean }
  /**
   * Nothing saved; the form again, built on what is stored now. `meanwhile`: someone changed a field the
   * person changed too (the form is merged). `replaced`: what is stored now is another resource (deleted
   * and made again under its name), so nothing the form showed applies to it. `unknown`: the form did not
   * say which revision it showed, and what is stored now is not the one it names. `both`: the fields whose
   * text is not what is stored now, each the person's to look at.
   */
  | ({ kind: 'stale'; reason: StaleReason; both: (keyof V & string)[] } & Shown<V>);

type StaleReason = 'meanwhile' | 'replaced' | 'unknown';

/**
 * Saves what the person changed on a form built on `sent.base` at `sent.etag`. When someone saved
 * meanwhile, and none of the fields the person changed was changed by them, the change is saved on top of
 * theirs (with the current tag, so a third save in between is caught too); otherwise nothing is saved and
 * the outcome is the form again: merged, or, when what is stored now is another resource or the form did
 * not name its revision, as typed on what is stored.
 */
export async function saveInPlace<V extends FormValues>(input: {
  typed: V;
  sent: { etag: string; base: V | undefined };
  fields: readonly (keyof V & string)[];
  /** What is stored now, as the form shows it, with its tag; or the failed read. */
  read: () => Promise<FormBase<V> | OperationResponse>;
  /** Saves the changed fields if the stored revision is still `ifMatch`. */
  save: (changed: Partial<V>, ifMatch: string) => Promise<OperationResponse>;
}): Promise<InPlaceOutcome<V>> {
  const { typed, fields } = input;
  let etag = input.sent.etag;
  let base = input.sent.base;
  // The fields whose text differs from `stored`, and the body that sends them as typed.
  const unlike = (stored: V) => fields.filter((f) => !exact(typed[f]!, stored[f]!));
  const fieldsOf = (names: (keyof V & string)[]) =>
    Object.fromEntries(names.map((f) => [f, typed[f]])) as Partial<V>;
  if (!base || etag === '') {
    // A form without the values it showed or the revision it was built on (made before forms carried them,
    // or tampered with) is compared with what is stored. Built on the revision stored now, what it showed is
    // that revision; built on another, or on none it names, it cannot tell the person's changes from
    // someone else's: nothing is saved, and the person looks at the fields it sends unlike what is stored.
    const current = await input.read();
    if (!('base' in current)) return { kind: 'refused', response: current };
    const differing = unlike(current.base);
    if (differing.length === 0) return { kind: 'unchanged' };
    if (etag === '' || !namesForWrite(etag, current.etag)) {
      // Sent all the same, with a precondition that does not hold, so that it changes nothing and the
      // operation still decides who may write first: a reader's forged form is a 403, not a form to fix.
      const response = await input.save(fieldsOf(differing), etag === '' ? NO_REVISION : etag);
      if (isOk(response)) return { kind: 'unchanged' };
      if (![400, 409, 412].includes(response.status)) return { kind: 'refused', response };
      const reason = etag === '' ? 'unknown' : sameResource(etag, current.etag) ? 'meanwhile' : 'replaced';
      return { kind: 'stale', reason, values: typed, both: differing, ...current };
    }
    base = current.base;
  }
  // Exact, here and in the merge: a field the form gave back as it showed it is the stored text itself
  // (kit.edited), so any other text, a space or a line break more, is the person's change.
  const changed = unlike(base);
  if (changed.length === 0) return { kind: 'unchanged' };
  const body = fieldsOf(changed);
  // Shown again if refused: what was typed, on what the comparison above was made with.
  let shown: Shown<V> = { values: typed, etag: input.sent.etag, base };
  let meanwhile = false;
  for (let attempt = 0; ; attempt++) {
    const response = await input.save(body, etag);
    if (isOk(response)) {
      // The operation stored what was there already (`de, fr` typed for `de fr`): the revision stands.
      const saved = (response.body as { etag?: unknown } | undefined)?.etag;
      return saved !== undefined && saved === etag ? { kind: 'unchanged' } : { kind: 'saved', response };
    }
    if (response.status !== 412) return { kind: 'refused', response, form: shown, meanwhile };
    const current = await input.read();
    if (!('base' in current)) return { kind: 'refused', response: current };
    // Another resource under the same name now (or a tag that was never this one's): nothing the form
    // showed is its, so nothing is merged onto it.
    if (!sameResource(etag, current.etag)) {
      return { kind: 'stale', reason: 'replaced', values: typed, both: unlike(current.base), ...current };
    }
    const merged = mergeStale(typed, base, current.base, fields, exact);
    shown = { values: merged.values, etag: current.etag, base: current.base };
    meanwhile = true;
    // Saved on top of theirs once; a second refusal means saves keep landing in between: let the person look.
    if (merged.both.length > 0 || attempt > 0) {
      return { kind: 'stale', reason: 'meanwhile', both: merged.both, ...shown };
    }
    etag = current.etag;
  }
}

/** What a stale form says above its fields: that nothing was saved, and whose text a field shows. */
function staleMessages(noun: string, reason: StaleReason, both: string[]): string[] {
  if (reason === 'meanwhile') {
    return [
      `Someone saved the ${noun} while you were editing; nothing was saved. The fields you did not change now show what they saved, the ones you changed keep your text: check and save again.`,
      ...(both.length > 0
        ? [`You and they both changed ${both.join(', ')}: yours is shown, and saving replaces theirs.`]
        : []),
    ];
  }
  return [
    reason === 'replaced'
      ? `The ${noun} under this name is not the one this page showed: it was deleted and another made in its place meanwhile. Nothing was saved.`
      : `This form did not say which version of the ${noun} it showed, and it may have changed since: nothing was saved.`,
    `The form keeps what you typed${both.length > 0 ? `; ${both.join(', ')} differ from what is stored now, which is shown beside them` : ''}. Check it and save again to change the ${noun} as it is now.`,
  ];
}

/** An edit form as a page shows it again: its values, what is wrong with them, and what it is built on. */
export interface EditForm<V extends FormValues> {
  values: V;
  fields?: FieldErrors;
  form?: string[];
  etag: string;
  base: V;
}

/**
 * What the page answers to a save's outcome: back to itself with a notice, the form again (stale, or
 * refused for what was typed: a status in `formStatuses`), or the problem page.
 */
export function afterSave<V extends FormValues>(
  outcome: InPlaceOutcome<V>,
  form: {
    noun: string;
    labels: Record<keyof V & string, string>;
    formStatuses: readonly number[];
  },
): { notice: string } | { status: number; form: EditForm<V> } | { problem: OperationResponse } {
  switch (outcome.kind) {
    case 'saved':
      return { notice: `${form.noun[0]!.toUpperCase()}${form.noun.slice(1)} saved.` };
    case 'unchanged':
      return { notice: 'Nothing was changed, so nothing was saved.' };
    case 'stale':
      return {
        status: 412,
        form: {
          values: outcome.values,
          // Each field to look at says, next to it, what is stored now.
          fields: Object.fromEntries(
            outcome.both.map((field) => [
              field,
              `${outcome.reason === 'meanwhile' ? 'They saved' : 'Stored now'}: ${outcome.base[field] || '(empty)'}`,
            ]),
          ),
          form: staleMessages(
            form.noun,
            outcome.reason,
            outcome.both.map((field) => form.labels[field]),
          ),
          etag: outcome.etag,
          base: outcome.base,
        },
      };
    case 'refused': {
      const r = outcome.response;
      if (!outcome.form || !form.formStatuses.includes(r.status)) return { problem: r };
      const errors = formErrors(r);
      // Refused on top of what someone saved meanwhile: the form shows that, or the person would be told of
      // a clash with values the form does not show.
      const meanwhile = outcome.meanwhile
        ? [
            `Someone saved the ${form.noun} while you were editing: the fields you did not change now show what they saved.`,
          ]
        : [];
      return { status: r.status, form: { ...outcome.form, ...errors, form: [...meanwhile, ...errors.form] } };
    }
  }
}
