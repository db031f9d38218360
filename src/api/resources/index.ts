import type { OperationHandler } from '../pipeline.ts';
import { accountHandlers } from './accounts.ts';
import { modelHandlers } from './models.ts';
import { projectHandlers } from './projects.ts';
import { tokenHandlers } from './tokens.ts';
import { userHandlers } from './user.ts';

/** Every operation's handler by operationId; the pipeline refuses to start if one is missing. */
export const handlers: Record<string, OperationHandler> = {
  ...userHandlers,
  ...accountHandlers,
  ...projectHandlers,
  ...modelHandlers,
  ...tokenHandlers,
};
