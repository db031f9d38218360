import type { OperationHandler } from '../pipeline.ts';
import { accountHandlers } from './accounts.ts';
import { projectHandlers } from './projects.ts';
import { userHandlers } from './user.ts';

/** Every operation's handler by operationId; the pipeline refuses to start if one is missing. */
export const handlers: Record<string, OperationHandler> = {
  ...userHandlers,
  ...accountHandlers,
  ...projectHandlers,
};
