// Which characters client text may carry, checked once for every door that stores what it is sent.
//
// PostgreSQL cannot store NUL in text or jsonb (the driver error used to surface as a 500), and a lone
// UTF-16 surrogate is not a character at all: it is stored as U+FFFD while the response would echo the
// original, so what the client sees is not what was saved. Other C0 control characters are refused too:
// no field of ours means them, and they hide text in logs and terminals. Tab, line feed and carriage
// return stay allowed, for free text such as guidelines and definitions.

export interface TextIssue {
  /** JSON pointer, below the prefix given to findTextIssues, to the offending string or object key. */
  pointer: string;
  message: string;
}

// C0 controls but tab (09), LF (0a), CR (0d); then a high surrogate not followed by a low one, or a low
// surrogate not preceded by a high one. Without the `u` flag the regex sees UTF-16 code units.
const FORBIDDEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its job.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why a string is refused, or undefined when it is acceptable. */
function textProblem(text: string): string | undefined {
  const match = FORBIDDEN.exec(text);
  if (!match) return undefined;
  const code = match[0].charCodeAt(0);
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return code >= 0xd800
    ? `contains an unpaired UTF-16 surrogate (${hex}); send valid Unicode text`
    : `contains the control character ${hex}; only tab, line feed and carriage return are allowed`;
}

/** Where a value sits: its key under its parent. The pointer is spelled out only for a refused string. */
interface Place {
  parent: Place | undefined;
  key: string;
}

/**
 * Every string in `value` (object keys included, since they are stored as well) that textProblem refuses,
 * with a JSON pointer under `pointer`. Iterative, so a deeply nested body cannot overflow the stack; a
 * pointer is built only for what is refused (a 5,000-entry glossary has tens of thousands of strings).
 */
export function findTextIssues(value: unknown, pointer: string): TextIssue[] {
  const issues: TextIssue[] = [];
  const pending: [unknown, Place | undefined][] = [[value, undefined]];
  while (pending.length > 0) {
    const [node, place] = pending.pop()!;
    if (typeof node === 'string') {
      const message = textProblem(node);
      if (message) issues.push({ pointer: pointerOf(pointer, place), message });
    } else if (Array.isArray(node)) {
      for (let index = node.length - 1; index >= 0; index--)
        pending.push([node[index], { parent: place, key: String(index) }]);
    } else if (node !== null && typeof node === 'object') {
      const keys = Object.keys(node);
      for (let index = keys.length - 1; index >= 0; index--) {
        const child: Place = { parent: place, key: keys[index]! };
        const message = textProblem(child.key);
        if (message) issues.push({ pointer: pointerOf(pointer, child), message: `its name ${message}` });
        pending.push([(node as Record<string, unknown>)[child.key], child]);
      }
    }
  }
  return issues;
}

function pointerOf(prefix: string, place: Place | undefined): string {
  const keys: string[] = [];
  for (let at = place; at; at = at.parent) keys.push(`/${escapePointer(at.key)}`);
  return prefix + keys.reverse().join('');
}

// RFC 6901. A key with a refused character is still named; the pointer is for the client to find it.
function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
