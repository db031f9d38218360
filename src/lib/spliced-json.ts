// A response body whose biggest field is already JSON text.
//
// A 5,000-entry glossary is about 1 MB of JSON; building 5,000 objects from rows and serialising them again
// cost 11–14 ms of CPU a read, for a version whose entries never change. A body made by withJsonField
// carries that field as the text it was serialised to once: the doors' serializer (jsonOf) splices the text
// in, and nothing is parsed or stringified per read. Anything else that reads the field (a page, response
// validation, the MCP SDK's output check) gets a real array, parsed from the text on first access, so the
// shortcut is invisible to code that does not ask for it.

/** A JSON array as text, and how many elements it holds. */
export interface JsonArrayText {
  text: string;
  length: number;
}

interface SplicedField {
  /** The body's other fields, serialised as they are, before the spliced one. */
  head: Record<string, unknown>;
  key: string;
  /** The field's text, and its length so that a summary can count the elements without parsing. */
  json: JsonArrayText;
}

const splicedFields = new WeakMap<object, SplicedField>();

/**
 * `head` with one more field, last, whose value is the JSON array `text` (of `length` elements). The body
 * must not be changed afterwards: jsonOf serialises `head` as it was given.
 */
export function withJsonField<T extends object>(
  head: Record<string, unknown>,
  key: string,
  json: JsonArrayText,
): T {
  const body = { ...head };
  let parsed: unknown;
  Object.defineProperty(body, key, {
    enumerable: true,
    get() {
      parsed ??= JSON.parse(json.text);
      return parsed;
    },
  });
  splicedFields.set(body, { head: { ...head }, key, json });
  return body as T;
}

/** JSON.stringify(value), with a field made by withJsonField spliced in as its text. */
export function jsonOf(value: unknown): string {
  const spliced = typeof value === 'object' && value !== null ? splicedFields.get(value) : undefined;
  if (!spliced) return JSON.stringify(value);
  const head = JSON.stringify(spliced.head);
  const separator = head === '{}' ? '' : ',';
  return `${head.slice(0, -1)}${separator}${JSON.stringify(spliced.key)}:${spliced.json.text}}`;
}

/** The number of elements of each array field of `body`, without parsing a spliced one. */
export function arrayLengths(body: Record<string, unknown>): [key: string, length: number][] {
  const spliced = splicedFields.get(body);
  const lengths: [string, number][] = [];
  for (const key of Object.keys(body)) {
    if (key === spliced?.key) lengths.push([key, spliced.json.length]);
    else if (Array.isArray(body[key])) lengths.push([key, body[key].length]);
  }
  return lengths;
}
