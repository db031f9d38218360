import type { EntityManager } from '@mikro-orm/postgresql';
import type { Caller } from '../authz/caller.ts';
import { AuditEvent, type IAccount } from '../db/entities/index.ts';

/** Who did it and through what: a bearer caller (REST, MCP) or a person in a browser session (web pages). */
export interface AuditActor {
  userId: string;
  credential?: Caller['credential'];
}

export interface AuditRecord {
  action: string;
  resourceType: string;
  resourceId: string | null;
  account: IAccount | null;
  details?: Record<string, unknown>;
  /** Which door the change came through: rest, mcp or web. */
  door: string;
  meta: { ip?: string; userAgent?: string; requestId?: string };
}

/** Adds an audit event to the unit of work; it is written with the change it records, in the same flush. */
export function recordAudit(em: EntityManager, actor: AuditActor, record: AuditRecord): void {
  const credential = actor.credential;
  em.create(AuditEvent, {
    actorUser: actor.userId,
    actorTokenId: credential?.kind === 'account_token' ? credential.tokenId : null,
    actorClientId: credential?.kind === 'oauth' ? credential.clientId : null,
    account: record.account,
    action: record.action,
    resourceType: record.resourceType,
    resourceId: record.resourceId,
    ip: record.meta.ip ?? null,
    userAgent: record.meta.userAgent?.slice(0, 500) ?? null,
    details: { ...record.details, door: record.door, requestId: record.meta.requestId },
  });
}
