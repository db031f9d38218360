// The service's front door for people: `npm start` prints the base URL, and whoever opens it should learn
// what runs here and where to go next (the settings pages, the MCP endpoint, the REST API and its
// document) instead of a bare 404. Also serves openapi.yaml itself, the contract SDKs and tools read.
import { readFileSync } from 'node:fs';
import { type Request, type Response, Router } from 'express';
import { OPENAPI_FILE } from '../api/catalogue.ts';
import { problems, sendProblem } from '../api/problem.ts';
import { html, page } from './html.ts';

export function homeRoutes(baseUrl: string): Router {
  const router = Router();
  const openapi = readFileSync(OPENAPI_FILE, 'utf8');
  const home = homePage(baseUrl);

  router.get('/', (_req, res) => {
    res.type('html').send(home);
  });
  router.get('/openapi.yaml', (_req, res) => {
    // Public, like discovery: SDK generators and API explorers fetch it from other origins.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.type('application/yaml').send(openapi);
  });
  return router;
}

/**
 * The last handler: a path nobody serves. Browsers get a page with a way back; everything else the same
 * problem+json as the API, so no client ever has to parse express's default HTML.
 */
export function notFound(req: Request, res: Response): void {
  if (req.accepts(['application/json', 'text/html']) === 'text/html') {
    res
      .status(404)
      .type('html')
      .send(
        page(
          'Not found',
          html`<h1>Not found</h1><p>There is no page at <code>${req.path}</code>.</p>
<p><a href="/">Go to the start page</a></p>`,
        ),
      );
    return;
  }
  sendProblem(res, problems.notFound('No such page or endpoint.'));
}

function homePage(baseUrl: string): string {
  const mcpUrl = `${baseUrl}/mcp`;
  return page(
    'Home',
    html`<h1>Localization service</h1>
<p>Projects, voice, glossaries and translation models of personal and organization accounts, behind one
permission model, reachable from a browser, from code and from coding agents.</p>

<h2>In a browser</h2>
<p>The <a href="/dashboard">Dashboard</a>: your accounts and organizations, their members, projects, voice,
glossary and models; <a href="/settings/tokens">account tokens</a> for scripts and CI,
<a href="/settings/apps">connected apps</a> you have allowed in, your
<a href="/settings/identities">sign-in methods</a> and your <a href="/settings/sessions">sessions</a>. Any of
them asks you to sign in first.</p>

<h2>For coding agents (MCP)</h2>
<p>Add this server to your agent; it signs you in through this service and asks what it may do.</p>
<div class="card"><code id="mcp-url">${mcpUrl}</code></div>
<p class="muted">Claude Code: <code>claude mcp add --transport http l10n ${mcpUrl}</code></p>

<h2>For code (REST)</h2>
<p>The API lives under <code>${baseUrl}/api/v1</code>; <a href="/openapi.yaml">openapi.yaml</a> describes
every operation, its scope and its errors. Send an account token or an OAuth access token as
<code>Authorization: Bearer …</code>.</p>
<p class="muted">OAuth clients discover the authorization server at
<a href="/.well-known/oauth-authorization-server">/.well-known/oauth-authorization-server</a>.</p>`,
  );
}
