import type { Handlers, Preflights } from '../pipeline.ts';
import { accountHandlers } from './accounts.ts';
import { appHandlers } from './apps.ts';
import { auditHandlers } from './audit.ts';
import { glossaryHandlers } from './glossary.ts';
import { identityHandlers, identityPreflights } from './identity.ts';
import { invitationHandlers } from './invitations.ts';
import { memberHandlers } from './members.ts';
import { modelHandlers } from './models.ts';
import { organizationHandlers } from './organizations.ts';
import { projectHandlers } from './projects.ts';
import { tokenHandlers } from './tokens.ts';
import { userHandlers } from './user.ts';
import { voiceHandlers } from './voice.ts';

/** Every operation's handler by operationId; the pipeline refuses to start if one is missing. */
export const handlers = {
  ...userHandlers,
  ...accountHandlers,
  ...appHandlers,
  ...projectHandlers,
  ...modelHandlers,
  ...tokenHandlers,
  ...organizationHandlers,
  ...memberHandlers,
  ...invitationHandlers,
  ...voiceHandlers,
  ...glossaryHandlers,
  ...auditHandlers,
  ...identityHandlers,
} satisfies Handlers;

/** The operations that wait on the network before their transaction (Preflights in pipeline.ts). */
export const preflights = { ...identityPreflights } satisfies Preflights;
