// OpenAPI pieces as self-contained JSON Schemas. MCP clients see one tool schema at a time, with no
// document around it, so every `$ref` is inlined, and OpenAPI-only keywords are dropped.

export type JsonSchema = Record<string, unknown>;

/** OpenAPI keywords that are not JSON Schema, or only add weight to what an agent reads. */
const DROPPED_KEYWORDS = new Set(['example', 'xml', 'externalDocs', 'discriminator']);
/** Keywords whose values are data, not schemas: copied as they are. */
const VALUE_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

/**
 * Follows a local `$ref` (`#/components/...`) and returns the node it names; siblings of the `$ref`
 * (OpenAPI 3.1 allows `description` next to it) override the target's own.
 */
// biome-ignore lint/suspicious/noExplicitAny: parsed YAML, read by the caller as the OpenAPI object it is
export function resolveRef(document: Record<string, unknown>, node: unknown): any {
  if (!isObject(node) || typeof node.$ref !== 'string') return node;
  const { $ref, ...siblings } = node;
  const target = pointerGet(document, $ref);
  return Object.keys(siblings).length > 0 ? { ...resolveRef(document, target), ...siblings } : target;
}

/** A deep copy of `schema` with every `$ref` inlined; a recursive schema cannot be inlined and throws. */
export function inlineSchema(document: Record<string, unknown>, schema: unknown, where: string): JsonSchema {
  const inline = (node: unknown, refs: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => inline(item, refs));
    if (!isObject(node)) return node;
    if (typeof node.$ref === 'string') {
      if (refs.includes(node.$ref)) {
        throw new Error(
          `openapi.yaml: ${where} uses the recursive schema ${node.$ref}, which MCP cannot inline`,
        );
      }
      const { $ref, ...siblings } = node;
      const target = inline(pointerGet(document, $ref), [...refs, $ref]) as JsonSchema;
      return { ...target, ...(inline(siblings, refs) as JsonSchema) };
    }
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-')) continue;
      if (VALUE_KEYWORDS.has(key)) out[key] = structuredClone(value);
      // Under `properties` the keys are field names, never keywords: a field called `example` stays.
      else if (key === 'properties' && isObject(value)) out[key] = inlineMap(value, refs);
      else out[key] = inline(value, refs);
    }
    return out;
  };
  const inlineMap = (map: Record<string, unknown>, refs: readonly string[]) =>
    Object.fromEntries(Object.entries(map).map(([name, value]) => [name, inline(value, refs)]));
  const result = inline(schema, []);
  if (!isObject(result)) throw new Error(`openapi.yaml: ${where} has no schema object`);
  return result;
}

/** Whether a schema is a plain object type with its fields under `properties`, nothing combined. */
export function isPlainObjectSchema(schema: JsonSchema): boolean {
  return schema.type === 'object' && !('oneOf' in schema || 'anyOf' in schema || 'allOf' in schema);
}

/**
 * Whether every value the schema accepts is an object: a plain object schema, or a combination
 * (`allOf`, `oneOf`, `anyOf`) of object schemas such as a resource extended with a one-time secret.
 */
export function describesObjects(schema: JsonSchema): boolean {
  if (schema.type !== undefined) return schema.type === 'object';
  const members = ['allOf', 'oneOf', 'anyOf'].flatMap((keyword) => (schema[keyword] as JsonSchema[]) ?? []);
  return members.length > 0 && members.every(describesObjects);
}

function pointerGet(document: Record<string, unknown>, ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`openapi.yaml: only local $refs are supported (got ${ref})`);
  let node: unknown = document;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node) || !(key in node)) throw new Error(`openapi.yaml: $ref ${ref} does not resolve`);
    node = node[key];
  }
  return node;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
