// How deeply the JSON a client sends may nest. Code that walks a parsed value recursively (the MCP SDK's
// handling of a message among it) overflows the stack some thousands of levels down, which surfaced as a
// 500; no request of ours needs more than a handful of levels, so a door refuses anything beyond this
// bound before such code sees it.

/** Levels of arrays and objects a value may nest: `"x"` is 0 levels, `[]` and `{"a":"x"}` are 1. */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` nests arrays and objects more than `limit` levels deep. Iterative, so depth costs no stack. */
export function nestedDeeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const pending: [object, number][] = [];
  const visit = (node: unknown, depth: number) => {
    if (node !== null && typeof node === 'object') pending.push([node, depth]);
  };
  visit(value, 1);
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (depth > limit) return true;
    for (const item of Array.isArray(node) ? node : Object.values(node)) visit(item, depth + 1);
  }
  return false;
}
