// The Content-Security-Policy of every response (helmet sets it in src/app.ts). Strict: nothing inline,
// script or style, and nothing from elsewhere. Forms post to our own origin only, except that a page which
// ends an authorization (sign-in, consent) may also send the browser on to that client's redirect URI:
// browsers apply `form-action` to every redirect a form submission follows, so without the client's
// origin there, the final redirect of Approve to, say, http://127.0.0.1:53117/callback would be blocked.
import type { ServerResponse } from 'node:http';

export const CSP_DIRECTIVES: Record<string, string[]> = {
  'default-src': ["'none'"],
  // We serve no script; 'self' (not 'none') so oidc-provider's form_post page can add its script's hash.
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
};

const HEADER = 'Content-Security-Policy';

/** The CSP source expression that matches a redirect URI: its origin, or its private-use scheme. */
export function formActionSource(redirectUri: string): string | undefined {
  const url = URL.parse(redirectUri);
  if (!url) return undefined;
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin;
  // A private-use scheme (cursor:, vscode:) has no origin; the scheme is the narrowest source there is.
  return /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) ? url.protocol : undefined;
}

/** Lets this response's forms (and the redirects they follow) reach a client's already-validated redirect URI. */
export function allowFormActionTo(res: ServerResponse, redirectUri: string): void {
  const source = formActionSource(redirectUri);
  const header = res.getHeader(HEADER);
  if (!source || typeof header !== 'string') return;
  res.setHeader(
    HEADER,
    header
      .split(';')
      .map((directive) => {
        const trimmed = directive.trim();
        return trimmed.startsWith('form-action ') && !trimmed.split(/\s+/).includes(source)
          ? `${trimmed} ${source}`
          : trimmed;
      })
      .join(';'),
  );
}
