// Server-rendered pages of the authorization server (sign-in, consent, connected apps, errors): one
// layout, one escaping function, no client-side script. Every user-controlled string goes through esc().

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** Marks a fragment as already-safe HTML so templates can nest without double escaping. */
export interface Html {
  readonly html: string;
}
export const raw = (html: string): Html => ({ html });

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

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--card:#f6f8fa;--line:#d0d7de;--accent:#0a58ca;--danger:#b42318}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4493f8;--danger:#f85149}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:34rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}
h2{font-size:1.15rem;margin:1.25rem 0 .5rem}
h3{font-size:1rem;margin:.75rem 0 .25rem}
p{margin:.5rem 0}
.muted{color:var(--muted)}
.card{background:var(--card);border:1px solid var(--line);border-radius:.5rem;padding:1rem;margin:1rem 0}
ul{padding-left:1.25rem;margin:.25rem 0}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=text]{width:100%;font:inherit;padding:.6rem .7rem;border:1px solid var(--line);border-radius:.375rem;background:var(--bg);color:var(--fg)}
button{font:inherit;font-weight:600;min-height:2.75rem;padding:.55rem 1rem;border-radius:.375rem;border:1px solid var(--line);background:var(--bg);color:var(--fg);cursor:pointer}
button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button.danger{color:var(--danger)}
button:focus-visible,input:focus-visible,a:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.25rem}
.actions button{flex:1 1 10rem}
.error{border-color:var(--danger);color:var(--danger)}
.users{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.5rem}
code{font-size:.95em;word-break:break-all}
a{color:var(--accent)}
a.button{display:inline-block;font-weight:600;padding:.55rem 1rem;border-radius:.375rem;border:1px solid var(--line);text-decoration:none}
a.button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
.settings-nav{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;border-bottom:1px solid var(--line);padding-bottom:.75rem;margin-bottom:1rem}
.settings-nav .signout{margin-left:auto;display:flex;align-items:center;gap:.5rem}
.settings-nav .signout button{min-height:2.25rem;padding:.3rem .75rem}
input[type=number]{width:8rem;font:inherit;padding:.6rem .7rem;border:1px solid var(--line);border-radius:.375rem;background:var(--bg);color:var(--fg)}
fieldset{border:1px solid var(--line);border-radius:.375rem;margin:.75rem 0;padding:.5rem .75rem}
legend{font-weight:600;padding:0 .25rem}
label.check{display:flex;gap:.5rem;align-items:flex-start;font-weight:400;margin:.35rem 0}
label.check input{margin-top:.3rem}
label.check code{display:block;word-break:normal}
.badge{display:inline-block;font-size:.8rem;font-weight:600;padding:0 .5rem;border-radius:1rem;border:1px solid var(--line)}
.badge.active{color:#1a7f37;border-color:#1a7f37}
.badge.revoked,.badge.expired{color:var(--danger);border-color:var(--danger)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .75rem;margin:.5rem 0}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
.secret{font-size:1rem;display:block;padding:.75rem;border:1px dashed var(--accent);border-radius:.375rem;background:var(--bg);user-select:all}
`;

export function page(title: string, body: Html): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)} · Localization service</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body.html}
</main>
</body>
</html>`;
}
