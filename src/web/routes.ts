// The web pages: one router with the page toolkit, the stylesheet, and every page module. Mounted by
// src/app.ts after the API and MCP doors and before the authorization server.
import { fileURLToPath } from 'node:url';
import express, { Router } from 'express';
import { createKit, type WebDeps } from './kit.ts';
import { accountSettingsPages } from './pages/account-settings.ts';
import { glossaryPages } from './pages/glossary.ts';
import { orgSignInPages } from './pages/org-sign-in.ts';
import { organizationPages } from './pages/organizations.ts';
import { projectPages } from './pages/projects.ts';
import { settingsPages } from './pages/settings.ts';
import { voicePages } from './pages/voice.ts';

const ASSETS = fileURLToPath(new URL('./assets', import.meta.url));

export function webRoutes(deps: WebDeps): Router {
  const router = Router();
  // Stylesheets (and any script) are files, never inline, so the Content-Security-Policy can forbid inline.
  router.use('/assets', express.static(ASSETS, { index: false, fallthrough: true, maxAge: '1h' }));
  const kit = createKit(deps);
  projectPages(router, kit, deps.pipeline);
  organizationPages(router, kit, deps.pipeline, deps.ctx.orm, deps.ctx.config.baseUrl);
  orgSignInPages(router, kit, deps.pipeline, deps.ctx.config.baseUrl);
  settingsPages(router, kit, deps.pipeline, deps.ctx);
  voicePages(router, kit, deps.pipeline);
  glossaryPages(router, kit, deps.pipeline);
  accountSettingsPages(router, kit, deps.pipeline);
  return router;
}
