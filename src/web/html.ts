// Server-rendered pages of the authorization server (sign-in, consent, connected apps, errors): one
// layout, one escaping function, no client-side script and no inline style (the Content-Security-Policy
// allows neither; the stylesheet is src/web/app.css). Every user-controlled string goes through esc().
import { STYLESHEET_URL } from './assets.ts';

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Marks a fragment as already-safe HTML so templates can nest without double escaping. */
export interface Html {
  readonly html: string;
}
const raw = (html: string): Html => ({ html });

/** Tagged template: interpolated values are escaped unless they are Html (or arrays of Html). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return raw(out);
}

function render(value: unknown): string {
  if (Array.isArray(value)) return value.map(render).join('');
  if (value && typeof value === 'object' && 'html' in value) return (value as Html).html;
  if (value === undefined || value === null || value === false) return '';
  return esc(value);
}

export function page(title: string, body: Html): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)} · Localization service</title>
<link rel="stylesheet" href="${STYLESHEET_URL}">
</head>
<body>
<main>
${body.html}
</main>
</body>
</html>`;
}
