// JSON that a person types into a form field (the voice's locale overrides). JSON.parse keeps the last of
// two members with the same name and drops the other without a word, so `{"de": {…}, "de": {…}}` typed
// with two blocks would save one of them: the form says so instead.

/** One object or array being read: the names its members had so far, and the member now being read. */
interface Level {
  names?: Set<string>;
  member?: string;
  expectingName: boolean;
}

/**
 * The path to the first member whose name its object already has (`["de", "tone"]`), or undefined when
 * every object's names are distinct. `text` must be JSON that JSON.parse accepts.
 */
export function firstDuplicateName(text: string): string[] | undefined {
  const levels: Level[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = levels.at(-1);
    if (c === '"') {
      // A string ends at the first quote no backslash escapes (a backslash escapes the next character).
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (top?.names && top.expectingName) {
        const name = JSON.parse(text.slice(i, end + 1)) as string;
        top.member = name;
        top.expectingName = false;
        if (top.names.has(name)) return [...levels.map((level) => level.member!)];
        top.names.add(name);
      }
      i = end;
    } else if (c === '{') levels.push({ names: new Set(), expectingName: true });
    else if (c === '[') levels.push({ expectingName: false });
    else if (c === '}' || c === ']') levels.pop();
    else if (c === ',' && top?.names) top.expectingName = true;
  }
  return undefined;
}
