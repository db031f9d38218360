// OpenAPI pieces as self-contained JSON Schemas. MCP clients see one tool schema at a time, with no
// document around it: each schema is copied out of the resolved document (references already replaced by
// the catalogue's reference parser), and OpenAPI-only keywords are dropped.

export type JsonSchema = Record<string, unknown>;

/** OpenAPI keywords that are not JSON Schema, or only add weight to what an agent reads. */
const DROPPED_KEYWORDS = new Set(['example', 'xml', 'externalDocs', 'discriminator']);
/** Keywords whose values are data, not schemas: copied as they are. */
const VALUE_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);

/**
 * A deep copy of a schema from the resolved document (no `$ref` left: the catalogue's reference parser
 * replaced them), without OpenAPI-only keywords. A recursive schema (one that contains itself) cannot be
 * written out for an MCP client and throws.
 */
export function inlineSchema(schema: unknown, where: string): JsonSchema {
  const copy = (node: unknown, ancestors: readonly object[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => copy(item, ancestors));
    if (!isObject(node)) return node;
    if (ancestors.includes(node)) {
      throw new Error(`openapi.yaml: ${where} uses a recursive schema, which MCP cannot inline`);
    }
    const inside = [...ancestors, node];
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-')) continue;
      if (VALUE_KEYWORDS.has(key)) out[key] = structuredClone(value);
      // Under `properties` the keys are field names, never keywords: a field called `example` stays.
      else if (key === 'properties' && isObject(value))
        out[key] = Object.fromEntries(
          Object.entries(value).map(([name, field]) => [name, copy(field, inside)]),
        );
      else out[key] = copy(value, inside);
    }
    return out;
  };
  const result = copy(schema, []);
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
