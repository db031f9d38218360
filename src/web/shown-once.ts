// A secret shown once, on the page a form leads to (post, redirect, get): the form's handler seals it into
// a short-lived cookie for that one page, which opens and clears it. Reloading the page (or going back and
// forward) shows no secret again and posts nothing again; a form answered with the secret itself made a
// reload post the form again (a second token, or "already invited" in place of the link just made).
import type { Request, Response } from 'express';
import type { JWTPayload } from 'jose';
import { readCookie } from '../identity/sessions.ts';
import { createCookieSealer } from '../lib/sealed-cookie.ts';

/** Long enough for the redirect to be followed, short enough that an unopened secret does not linger. */
const TTL_SECONDS = 60;

export interface ShownOnce<T extends JWTPayload> {
  /** Seals `value` for the page at `path` and redirects there. */
  showAt(res: Response, path: string, value: T): Promise<void>;
  /** The value sealed for this page (clearing it), or undefined when it was shown already or expired. */
  take(req: Request, res: Response): Promise<T | undefined>;
}

/** `purpose` names the secret (its cookie, and the key it is sealed with); `secure` as the service's URL. */
export function shownOnce<T extends JWTPayload>(
  cookieKeys: readonly string[],
  purpose: string,
  secure: boolean,
): ShownOnce<T> {
  const sealer = createCookieSealer<T>(cookieKeys, purpose);
  const name = `l10n_${purpose.replaceAll('-', '_')}`;
  // Sent only to the page that shows it, and never with a request another site starts.
  const options = (path: string) => ({ path, httpOnly: true, sameSite: 'strict', secure }) as const;
  return {
    async showAt(res, path, value) {
      res.cookie(name, await sealer.seal(value, TTL_SECONDS), {
        ...options(path),
        maxAge: TTL_SECONDS * 1000,
      });
      res.redirect(303, path);
    },
    async take(req, res) {
      const value = await sealer.open(readCookie(req, name));
      // The path it was set for: this page's, wherever its router is mounted.
      res.clearCookie(name, options(req.baseUrl + req.path));
      return value;
    },
  };
}
