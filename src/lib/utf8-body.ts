// Bodies are read as UTF-8 (JSON has no other encoding; our forms are sent in it), and the decoders turn
// bytes that are not UTF-8 into U+FFFD, or a form's undecodable `%E9` into the text "%E9": what was saved
// would then not be what the client sent. So a body's bytes are checked first, as a `verify` step of
// express's body parsers, and one that is not UTF-8 is refused (400, "encoding.invalid", in each door's
// format: src/http-errors.ts) before anything reads it.
import { isUtf8 } from 'node:buffer';
import querystring from 'node:querystring';

// What the percent-escapes of a form stand for, as bytes, the way express's urlencoded parser reads them (a
// `%` that starts no escape stays as it is). Node has it, but its type declarations leave it out.
const { unescapeBuffer } = querystring as unknown as { unescapeBuffer(text: string): Buffer };

/** The error a body parser's `verify` throws; body-parser keeps its status and type. */
function notUtf8(): Error {
  return Object.assign(new Error('The body is not valid UTF-8.'), { status: 400, type: 'encoding.invalid' });
}

/** For express.json (and any body read as text): the bytes themselves must be UTF-8. */
export function requireUtf8Body(_req: unknown, _res: unknown, body: Buffer): void {
  if (!isUtf8(body)) throw notUtf8();
}

/** For express.urlencoded and forms read raw: the bytes the percent-escapes stand for must be UTF-8 too. */
export function requireUtf8Form(_req: unknown, _res: unknown, body: Buffer): void {
  // Only a form with escapes has more bytes to check (a refresh's form usually has none): `+` and every other
  // character outside an escape is already in `body`.
  const PERCENT = 0x25;
  if (!isUtf8(body) || (body.includes(PERCENT) && !isUtf8(unescapeBuffer(body.toString('latin1')))))
    throw notUtf8();
}
