// fast-check arbitraries derived from openapi.yaml's JSON schemas: values a schema accepts, and values
// that are wrong in the ways the attack and fuzz runs found (control characters, lone surrogates, odd ids
// and cursors, oversized strings and arrays, deep nesting, wrong types). Nothing here knows an operation
// by name, so a new operation or field is fuzzed without touching this file.

import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { MAX_REQUEST_BODY_BYTES } from '../../src/api/limits.ts';
import type { JsonSchema } from '../../src/mcp/json-schema.ts';

/** `valid`: what the schema accepts (as far as a schema can say); `fuzz`: any node may be replaced by junk. */
export type Mode = 'valid' | 'fuzz';

const SAMPLE_UUID = '0192f5c4-0000-7000-8000-000000000001';

/** Strings no field should accept or that PostgreSQL would choke on. */
export const oddText: fc.Arbitrary<string> = fc.oneof(
  // NUL, other C0 controls, and what tab/newline/DEL/C1/BOM/line separator look like next to them.
  fc
    .tuple(
      fc.string({ maxLength: 5 }),
      fc.constantFrom('\u0000', '\u0001', '\u0008', '\u000b', '\u001b[2J', '\u001f', '\u007f', '\u0085'),
      fc.string({ maxLength: 5 }),
    )
    .map((parts) => parts.join('')),
  fc.constantFrom('\t', '\r\n', '\ufeff', '\u2028', '\u200b', 'a\u0301', 'İ', 'ß', '😀', '\uffff'),
  // Lone surrogates, high and low, alone and inside text.
  fc
    .tuple(fc.string({ maxLength: 4 }), fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d'))
    .map(([text, half]) => `${text}${half}${text}`),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
  // Ids written the ways PostgreSQL or our rules refuse, or that only look like ours.
  fc.constantFrom(
    `urn:uuid:${SAMPLE_UUID}`,
    SAMPLE_UUID.toUpperCase(),
    `{${SAMPLE_UUID}}`,
    SAMPLE_UUID.replaceAll('-', ''),
    `${SAMPLE_UUID}0`,
    '------------------------------------',
    'ffffffff-ffff-ffff-ffff-fffffffffffff',
  ),
  fc.uuid().map((id) => `urn:uuid:${id}`),
  // Sizes around and far beyond every bound of the document (2000, 20000 characters, …).
  fc.constantFrom(40, 201, 2001, 20_001, 200_001).map((length) => 'x'.repeat(length)),
  fc.constantFrom(
    '',
    ' ',
    '  padded  ',
    "' or 1=1 --",
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '%00',
    '%',
  ),
  fc.constantFrom('null', 'true', '-1', '0', '1e309', 'NaN', '[]', '{}'),
);

/** A cursor: base64url of something that is not an id of ours (or not base64url at all). */
export const oddCursor: fc.Arbitrary<string> = fc.oneof(
  fc
    .oneof(
      fc.constantFrom(
        '------------------------------------',
        'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaa-',
        `urn:uuid:${SAMPLE_UUID}`,
        SAMPLE_UUID.toUpperCase(),
        SAMPLE_UUID,
        'ffffffff-ffff-ffff-ffff-ffffffffffff',
      ),
      fc.stringMatching(/^[0-9a-f-]{36}$/),
      fc.uuid(),
      oddText,
    )
    .map((text) => Buffer.from(text).toString('base64url')),
  fc.uint8Array({ maxLength: 60 }).map((bytes) => Buffer.from(bytes).toString('base64url')),
  oddText,
);

/**
 * A value nested `depth` levels deep, as arrays or objects. JSON.stringify (and fast-check's reporter)
 * recurse and overflow the stack a few thousand levels down, so it stays a marker until toJsonText writes it.
 */
class Deep {
  readonly depth: number;
  readonly asArray: boolean;
  constructor(depth: number, asArray: boolean) {
    this.depth = depth;
    this.asArray = asArray;
  }
  toString() {
    return `Deep(${this.depth}, ${this.asArray ? 'arrays' : 'objects'})`;
  }
}

/** JSON text of a generated value, Deep markers written out in full. */
export function toJsonText(value: unknown): string {
  const text = JSON.stringify(value, (_key, item) =>
    item instanceof Deep ? `@@deep:${item.depth}:${item.asArray}@@` : item,
  );
  return text.replace(/"@@deep:(\d+):(true|false)@@"/g, (_match, depth: string, asArray: string) => {
    const [open, close] = asArray === 'true' ? ['[', ']'] : ['{"a":', '}'];
    return `${open.repeat(Number(depth))}"x"${close.repeat(Number(depth))}`;
  });
}

/** Any JSON value of the wrong kind for most fields, including very deep and very wide ones. */
export const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddText,
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, Number.MAX_SAFE_INTEGER + 2, 0, -1, 1.5),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
  fc.constantFrom(10, 1000, 20_000).chain((depth) => fc.boolean().map((asArray) => new Deep(depth, asArray))),
  fc.constantFrom(201, 5001, 20_000).map((length) => Array.from({ length }, (_, i) => `item-${i}`)),
);

const LOCALE_KEYS = ['de', 'fr', 'de-CH', 'pt-BR', 'zh-Hant-TW', 'en'];

/** An arbitrary for `schema`; in `fuzz` mode every node (and every object key) may turn into junk. */
export function fromSchema(schema: JsonSchema, mode: Mode): fc.Arbitrary<unknown> {
  const valid = validFor(schema, mode);
  if (mode === 'valid') return valid;
  return fc.oneof({ weight: 5, arbitrary: valid }, { weight: 1, arbitrary: oddValue });
}

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema keywords are read dynamically.
function validFor(schema: Record<string, any>, mode: Mode): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  for (const keyword of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(schema[keyword]))
      return fc.oneof(...schema[keyword].map((s: JsonSchema) => fromSchema(s, mode)));
  }
  if (Array.isArray(schema.allOf)) {
    const merged: JsonSchema = { type: 'object', properties: {}, required: [] };
    for (const part of schema.allOf as JsonSchema[]) {
      Object.assign(merged.properties as object, part.properties);
      (merged.required as string[]).push(...((part.required as string[]) ?? []));
    }
    return validFor(merged, mode);
  }
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type: string) => validFor({ ...schema, type }, mode)));
  }
  switch (schema.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000, noNaN: true });
    case 'string':
      return stringFor(schema);
    case 'array':
      return arrayFor(schema, mode);
    case 'object':
      return objectFor(schema, mode);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema keywords are read dynamically.
function stringFor(schema: Record<string, any>): fc.Arbitrary<string> {
  const min: number = schema.minLength ?? 0;
  const max: number = schema.maxLength ?? 60;
  const fits = (text: string) => text.length >= min && text.length <= max;
  switch (schema.format) {
    case 'email':
      return fc.emailAddress().filter(fits);
    case 'uri':
      return fc.webUrl({ validSchemes: ['https'] }).filter(fits);
    case 'uuid':
      return fc.uuid();
    case 'date-time':
      return fc.date({ noInvalidDate: true }).map((date) => date.toISOString());
  }
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  return fc.oneof(
    fc.string({ minLength: min, maxLength: Math.min(max, 60) }),
    fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 30) }).filter(fits),
  );
}

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema keywords are read dynamically.
function arrayFor(schema: Record<string, any>, mode: Mode): fc.Arbitrary<unknown[]> {
  const items = fromSchema(schema.items ?? {}, mode);
  const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) };
  return schema.uniqueItems
    ? fc.uniqueArray(items, { ...constraints, selector: (item) => JSON.stringify(item) })
    : fc.array(items, constraints);
}

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema keywords are read dynamically.
function objectFor(schema: Record<string, any>, mode: Mode): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, JsonSchema> = schema.properties ?? {};
  const required = new Set<string>(schema.required ?? []);
  const fields = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [name, fromSchema(property, mode)]),
  );
  let object: fc.Arbitrary<Record<string, unknown>> = fc.record(fields, {
    requiredKeys: Object.keys(properties).filter((name) => required.has(name)),
  });
  const extra = schema.additionalProperties;
  if (extra && typeof extra === 'object') {
    // Open maps (translations, locale overrides) are keyed by locale in this API.
    const key =
      mode === 'valid' ? fc.constantFrom(...LOCALE_KEYS) : fc.oneof(fc.constantFrom(...LOCALE_KEYS), oddText);
    const map = fc.dictionary(key, fromSchema(extra, mode), {
      maxKeys: Math.min(schema.maxProperties ?? 3, 3),
    });
    object = fc.tuple(object, map).map(([known, more]) => ({ ...more, ...known }));
  }
  if (mode === 'fuzz') {
    // Unknown fields, and required ones left out.
    const drop = required.size > 0 ? fc.option(fc.constantFrom(...required), { freq: 5 }) : fc.constant(null);
    object = fc
      .tuple(object, fc.option(fc.tuple(oddText, oddValue), { freq: 5 }), drop)
      .map(([value, added, dropped]) => {
        const copy = { ...value };
        if (added) copy[added[0]] = added[1];
        if (dropped) delete copy[dropped];
        return copy;
      });
  }
  const minProperties: number = schema.minProperties ?? 0;
  return mode === 'valid' ? object.filter((value) => Object.keys(value).length >= minProperties) : object;
}

// --- one defect in an otherwise valid request ---
// Junk everywhere is refused at the first field; the defects that reach the database (a NUL in one stored
// string, one odd id) hide behind requests that are valid but for one thing. So most generated requests
// are valid ones with exactly one node changed.

type Key = string | number;

/** Characters inserted into an otherwise valid string. */
const ODD_CHARACTERS = [
  '\u0000',
  '\u0001',
  '\u001b',
  '\u007f',
  '\ud800',
  '\udfff',
  '\ufeff',
  '\u2028',
  '😀',
  '%00',
];

/** Every node below `value` (containers included), as paths of keys; `declared` adds absent ones. */
export function locationsIn(value: unknown, at: Key[] = []): Key[][] {
  const found: Key[][] = [];
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      found.push([...at, index], ...locationsIn(item, [...at, index]));
    });
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value))
      found.push([...at, key], ...locationsIn(item, [...at, key]));
  }
  return found;
}

/** A copy of `root` with the node at `path` replaced (objects and arrays on the way are copied). */
export function replaceAt(root: unknown, path: Key[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [Key, ...Key[]];
  const copy = (Array.isArray(root) ? [...root] : { ...(root as object) }) as Record<Key, unknown>;
  copy[head] = replaceAt(copy[head], rest, replacement);
  return copy;
}

/** Ways to break one node, given what it holds now and its name. */
export function mutationOf(current: unknown, name: Key | undefined): fc.Arbitrary<unknown> {
  if (name === 'cursor') return oddCursor;
  if (typeof current === 'string') {
    return fc.oneof(
      fc
        .tuple(fc.nat({ max: current.length }), fc.constantFrom(...ODD_CHARACTERS))
        .map(([at, odd]) => current.slice(0, at) + odd + current.slice(at)),
      fc.constantFrom(
        current.toUpperCase(),
        `urn:uuid:${current}`,
        `${current} `,
        current.repeat(Math.ceil(300 / Math.max(current.length, 1))),
      ),
      oddText,
      oddValue,
    );
  }
  if (Array.isArray(current)) {
    return fc.oneof(
      fc
        .constantFrom(201, 5001)
        .map((length) =>
          Array.from({ length }, (_, i) => current[i % Math.max(current.length, 1)] ?? `x${i}`),
        ),
      oddValue.map((odd) => [...current, odd]),
      oddValue,
    );
  }
  if (current !== null && typeof current === 'object') {
    return fc.oneof(
      fc.tuple(oddText, oddValue).map(([key, value]) => ({ ...current, [key]: value })),
      oddValue,
    );
  }
  return oddValue;
}

// --- HTTP-level defects: what a request can get wrong before its JSON is even read ---

/** The body limit of /api and /mcp (after any Content-Encoding is undone). */
const BODY_LIMIT_BYTES = MAX_REQUEST_BODY_BYTES;

export type WireDefect =
  /** A Content-Type charset other than UTF-8: 415. */
  | { kind: 'charset'; charset: string }
  /** A Content-Encoding the service does not read: 415. */
  | { kind: 'encoding'; encoding: string }
  /** A body that is not what its (supported) Content-Encoding says: garbage, or a compressed body cut short: 400. */
  | { kind: 'broken'; encoding: 'gzip' | 'deflate' | 'br' | 'zstd'; garbage: boolean; keep: number }
  /** A body just over the limit, sent as is or gzipped (small on the wire, too large once inflated): 413. */
  | { kind: 'oversize'; extra: number; gzip: boolean }
  /** A path segment that is not valid percent-encoding: 400. */
  | { kind: 'percent'; escape: string };

// zstd too: body-parser reads it where Node's zlib has it (Node 24).
const READ_ENCODINGS = ['identity', 'gzip', 'deflate', 'br', 'zstd'];

export function wireDefect(where: { body: boolean; path: boolean }): fc.Arbitrary<WireDefect> {
  const bodyDefects: fc.Arbitrary<WireDefect>[] = [
    fc
      .oneof(
        fc.constantFrom('iso-8859-1', 'windows-1252', 'us-ascii', 'shift_jis', 'klingon', 'utf8', 'ucs-2'),
        fc.stringMatching(/^[a-z][a-z0-9_-]{0,12}$/).filter((name) => !name.startsWith('utf-')),
      )
      .map((charset) => ({ kind: 'charset' as const, charset })),
    fc
      .oneof(
        fc.constantFrom('compress', 'x-compress', 'bzip2', 'exi', 'pack200-gzip', 'gzip2'),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/).filter((name) => !READ_ENCODINGS.includes(name)),
      )
      .map((encoding) => ({ kind: 'encoding' as const, encoding })),
    fc.record({
      kind: fc.constant('broken' as const),
      encoding: fc.constantFrom('gzip' as const, 'deflate' as const, 'br' as const, 'zstd' as const),
      garbage: fc.boolean(),
      keep: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
    }),
    fc.record({
      kind: fc.constant('oversize' as const),
      extra: fc.integer({ min: 1, max: 4096 }),
      gzip: fc.boolean(),
    }),
  ];
  const pathDefects: fc.Arbitrary<WireDefect>[] = [
    fc
      .constantFrom('%ZZ', '%', '%4', '%G1', '%FF', '%C0%80', '%ED%A0%80', '%E0%A4%A', '%F0%9F%98')
      .map((sequence) => ({ kind: 'percent' as const, escape: sequence })),
  ];
  return fc.oneof(...(where.body ? bodyDefects : []), ...(where.path ? pathDefects : []));
}

/** The status each defect is answered with, whatever the operation. */
export function expectedStatus(defect: WireDefect): 400 | 413 | 415 {
  switch (defect.kind) {
    case 'charset':
    case 'encoding':
      return 415;
    case 'oversize':
      return 413;
    default:
      return 400;
  }
}

/** The bytes and headers of a JSON body (`text`) carrying a body-level defect. */
export function wireBody(
  text: string,
  defect: WireDefect,
): { body: Buffer; headers: Record<string, string> } {
  const json = 'application/json';
  switch (defect.kind) {
    case 'charset':
      return { body: Buffer.from(text), headers: { 'content-type': `${json}; charset=${defect.charset}` } };
    case 'encoding':
      return {
        body: Buffer.from(text),
        headers: { 'content-type': json, 'content-encoding': defect.encoding },
      };
    case 'broken': {
      const compress = {
        gzip: gzipSync,
        deflate: deflateSync,
        br: brotliCompressSync,
        zstd: zstdCompressSync,
      }[defect.encoding];
      const whole = compress(Buffer.from(text));
      // Garbage starts with a byte no gzip, zlib or brotli stream of ours starts with; a cut stream lacks
      // at least its end (and its checksum).
      const body = defect.garbage
        ? Buffer.concat([Buffer.from([0xff, 0xff]), Buffer.from(text)])
        : whole.subarray(0, Math.max(1, Math.floor(whole.length * defect.keep)));
      return { body, headers: { 'content-type': json, 'content-encoding': defect.encoding } };
    }
    case 'oversize': {
      // Whitespace after the JSON value keeps it valid JSON: only its size is wrong.
      const padded = Buffer.from(
        text + ' '.repeat(Math.max(0, BODY_LIMIT_BYTES - Buffer.byteLength(text)) + defect.extra),
      );
      return defect.gzip
        ? { body: gzipSync(padded), headers: { 'content-type': json, 'content-encoding': 'gzip' } }
        : { body: padded, headers: { 'content-type': json } };
    }
    case 'percent':
      return { body: Buffer.from(text), headers: { 'content-type': json } };
  }
}
