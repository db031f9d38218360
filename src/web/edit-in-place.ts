// Edit forms of what several people change in place (a project, an organization). The form carries the
// ETag it was built on and the values it showed (`base`); a save sends only the fields the person changed,
// with If-Match. Two people editing different fields both keep their change, and a field both changed is
// never replaced unseen: the form comes back merged, saying whose is shown.
import type { OperationResponse } from '../api/pipeline.ts';
import { asShown, type FieldErrors, formErrors, isOk, text } from './kit.ts';

/** A form's fields as text, the way the page shows and the browser sends them. */
export type FormValues = Record<string, string>;

/** What an edit form carries besides its fields: the tag it was built on and what it showed. */
export interface FormBase<V extends FormValues> {
  etag: string;
  base: V;
}

/** The hidden fields of an edit form built on `values` at `etag` (the `edit-base` partial renders them). */
export function formBase<V extends FormValues>(values: V, etag: string): { etag: string; base: string } {
  // Encoded, not as hidden fields of their own: a browser rewrites line breaks in what it sends back, and
  // the base must be the stored text byte for byte to tell what the person changed.
  return { etag, base: Buffer.from(JSON.stringify(values)).toString('base64url') };
}

/** The base a form sent back; a missing or mangled one is none (the save then compares with what is stored). */
export function readFormBase<V extends FormValues>(body: unknown, fields: readonly (keyof V & string)[]) {
  const etag = text(body, 'etag');
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
const same = (a: string, b: string) => asShown(a).trim() === asShown(b).trim();

/**
 * A form refused as stale, merged onto what is stored now: a field the person left as the form showed it
 * takes the current value, a field they changed keeps theirs. `both` names the fields the two changed,
 * each in their own way.
 */
export function mergeStale<V extends FormValues>(
  typed: V,
  base: V,
  current: V,
  fields: readonly (keyof V & string)[],
): { values: V; both: (keyof V & string)[] } {
  const values = { ...typed };
  const both: (keyof V & string)[] = [];
  for (const field of fields) {
    if (same(typed[field]!, base[field]!)) values[field] = current[field]!;
    else if (!same(current[field]!, base[field]!) && !same(current[field]!, typed[field]!)) both.push(field);
  }
  return { values, both };
}

export type InPlaceOutcome<V extends FormValues> =
  | { kind: 'saved'; response: OperationResponse }
  | { kind: 'unchanged' }
  /** Refused for what was typed (400, 409) or for another reason: the response says which. */
  | { kind: 'refused'; response: OperationResponse }
  /** Someone changed a field the person changed too: the merged form, built on what is stored now. */
  | { kind: 'stale'; values: V; both: (keyof V & string)[]; etag: string; base: V };

/**
 * Saves what the person changed on a form built on `sent.base` at `sent.etag`. When someone saved
 * meanwhile, and none of the fields the person changed was changed by them, the change is saved on top of
 * theirs (with the current tag, so a third save in between is caught too); otherwise nothing is saved and
 * the outcome is the merged form.
 */
export async function saveInPlace<V extends FormValues>(input: {
  typed: V;
  sent: { etag: string; base: V | undefined };
  fields: readonly (keyof V & string)[];
  /** What is stored now, as the form shows it, with its tag; or the failed read. */
  read: () => Promise<FormBase<V> | OperationResponse>;
  save: (changed: Partial<V>, ifMatch: string) => Promise<OperationResponse>;
}): Promise<InPlaceOutcome<V>> {
  const { typed, fields } = input;
  let etag = input.sent.etag;
  // A form without the values it showed (sent before forms carried them, or forged) is compared with what is
  // stored. Its own tag still goes with the save: the operation decides who may write before any
  // precondition (a member's forged form is a 403), and a stale tag is then refused (412).
  const known = input.sent.base !== undefined;
  let base = input.sent.base;
  if (!base) {
    const current = await input.read();
    if (!('base' in current)) return { kind: 'refused', response: current };
    base = current.base;
  }
  // Exact: a field the form gave back as it showed it is the stored text itself (kit.edited), so anything
  // else is the person's.
  const changed = fields.filter((f) => typed[f] !== base[f]);
  if (changed.length === 0) return { kind: 'unchanged' };
  const body = Object.fromEntries(changed.map((f) => [f, typed[f]])) as Partial<V>;
  for (let attempt = 0; ; attempt++) {
    const response = await input.save(body, etag);
    if (response.status !== 412) {
      return isOk(response) ? { kind: 'saved', response } : { kind: 'refused', response };
    }
    const current = await input.read();
    if (!('base' in current)) return { kind: 'refused', response: current };
    if (!known) {
      // What the form showed is unknown, so every field it sends unlike what is stored may be a change of
      // someone else's it never saw: the person decides.
      const both = fields.filter((f) => !same(typed[f]!, current.base[f]!));
      return { kind: 'stale', values: typed, both, etag: current.etag, base: current.base };
    }
    const merged = mergeStale(typed, base, current.base, fields);
    // Saved on top of theirs once; a second refusal means saves keep landing in between: let the person look.
    if (merged.both.length > 0 || attempt > 0) {
      return { kind: 'stale', ...merged, etag: current.etag, base: current.base };
    }
    etag = current.etag;
  }
}

/** What a stale form says above its fields: that nothing was saved, and whose text a field shows. */
function staleMessages(noun: string, both: string[]): string[] {
  return [
    `Someone saved the ${noun} while you were editing; nothing was saved. The fields you did not change now show what they saved, the ones you changed keep your text: check and save again.`,
    ...(both.length > 0
      ? [`You and they both changed ${both.join(', ')}: yours is shown, and saving replaces theirs.`]
      : []),
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
    typed: V;
    sent: { etag: string; base: V | undefined };
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
          form: staleMessages(
            form.noun,
            outcome.both.map((field) => form.labels[field]),
          ),
          etag: outcome.etag,
          base: outcome.base,
        },
      };
    case 'refused': {
      const r = outcome.response;
      if (!form.formStatuses.includes(r.status)) return { problem: r };
      const { typed, sent } = form;
      return {
        status: r.status,
        form: { values: typed, ...formErrors(r), etag: sent.etag, base: sent.base ?? typed },
      };
    }
  }
}
