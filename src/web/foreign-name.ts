// A name someone else chose (an OAuth client's client_name), shown to the person who decides about it.
// Bidirectional formatting characters in it (U+202E RIGHT-TO-LEFT OVERRIDE and the like) would reorder the
// words around it, so that "Allow … to access your account?" could read as something else: they are
// removed. Pages also set the name in <bdi>, so that a name in a right-to-left script stays readable
// without moving the text beside it.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function foreignName(name: string): string {
  return name.replace(BIDI_CONTROLS, '');
}
