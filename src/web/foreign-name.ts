// A name someone else chose (an OAuth client's client_name), shown to the person who decides about it.
// Bidirectional formatting characters in it (U+202E RIGHT-TO-LEFT OVERRIDE and the like) would reorder the
// words around it, so that "Allow … to access your account?" could read as something else: they are
// removed. Pages also set the name in <bdi>, so that a name in a right-to-left script stays readable
// without moving the text beside it.
// A name is also cut to CLIENT_NAME_MAX_CHARACTERS: registration refuses a longer one, but a client named by
// a metadata document brings whatever its document says, and a name of a few thousand characters would fill
// the consent page and push what the person must read (the account, the address, the scopes) out of view.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The longest client_name registration takes, and the most of one a page shows, in characters. */
export const CLIENT_NAME_MAX_CHARACTERS = 100;

export function foreignName(name: string): string {
  const text = name.replace(BIDI_CONTROLS, '');
  if ([...text].length <= CLIENT_NAME_MAX_CHARACTERS) return text;
  // Cut where a reader sees a character end (a flag, a family emoji, a letter with its accent are one),
  // within the limit counted in code points: a cluster of a thousand combining marks is one grapheme.
  let kept = '';
  let count = 0;
  for (const { segment } of GRAPHEMES.segment(text)) {
    count += [...segment].length;
    if (count > CLIENT_NAME_MAX_CHARACTERS) break;
    kept += segment;
  }
  return `${kept}…`;
}

const GRAPHEMES = new Intl.Segmenter('en', { granularity: 'grapheme' });
