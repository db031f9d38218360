// The web pages: one router with the page toolkit and every page module (the stylesheet is src/web/assets.ts's). Mounted by
// src/app.ts after the API and MCP doors and before the authorization server.
import { Router } from 'express';
import { configuredProviders } from '../identity/providers.ts';
import { createKit, type WebDeps } from './kit.ts';
import { accountSettingsPages } from './pages/account-settings.ts';
import { glossaryPages } from './pages/glossary.ts';
import { identityPages } from './pages/identities.ts';
import { orgSignInPages } from './pages/org-sign-in.ts';
import { organizationPages } from './pages/organizations.ts';
import { projectPages } from './pages/projects.ts';
import { sessionPages } from './pages/sessions.ts';
import { settingsPages } from './pages/settings.ts';
import { voicePages } from './pages/voice.ts';

export function webRoutes(deps: WebDeps): Router {
  const router = Router();
  const kit = createKit(deps);
  projectPages(router, kit, deps.pipeline);
  organizationPages(router, kit, deps.pipeline, deps.ctx.orm, deps.ctx.config);
  orgSignInPages(router, kit, deps.pipeline, deps.ctx.config);
  settingsPages(router, kit, deps.pipeline, deps.ctx);
  voicePages(router, kit, deps.pipeline);
  glossaryPages(router, kit, deps.pipeline);
  // The providers a person may link (labels only; the sign-in itself is src/identity's).
  const providers = configuredProviders(deps.ctx.config).map(({ id, label }) => ({ id, label }));
  accountSettingsPages(router, kit, deps.pipeline, providers);
  identityPages(router, kit, providers);
  sessionPages(router, kit, deps.sessions);
  return router;
}
