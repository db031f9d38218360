import {
  Account,
  Invitation,
  Membership,
  Organization,
  OrganizationDomain,
  OrganizationSignInProvider,
} from './accounts.ts';
import {
  AccountModel,
  AccountToken,
  AuditEvent,
  GlossaryEntry,
  GlossarySettings,
  GlossaryVersion,
  OidcModel,
  Project,
  VoiceVersion,
} from './content.ts';
import { BrowserSession, Identity, SignInAttempt, User } from './identity.ts';

export * from './accounts.ts';
export * from './content.ts';
export * from './identity.ts';

export const allEntities = [
  User,
  Identity,
  BrowserSession,
  SignInAttempt,
  Account,
  Organization,
  Membership,
  Invitation,
  OrganizationDomain,
  OrganizationSignInProvider,
  Project,
  VoiceVersion,
  GlossaryVersion,
  GlossaryEntry,
  GlossarySettings,
  AccountModel,
  AccountToken,
  AuditEvent,
  OidcModel,
];
