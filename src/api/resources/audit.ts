import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { Account, AuditEvent, type IAuditEvent } from '../../db/entities/index.ts';
import { userHandles } from '../../domain/users.ts';
import { page, pageRequest } from '../pagination.ts';
import type { Handlers } from '../pipeline.ts';

// The audit log is read-only through the service: this module lists events and nothing edits or deletes
// them (the database refuses that too; see the audit migration). Who may read whose events is the
// policy's audit:read: administrators for their organization, everyone for their own personal account.

const DOORS: readonly unknown[] = ['rest', 'mcp', 'web'] satisfies Schemas.AuditEvent['door'][];
const isDoor = (value: unknown): value is NonNullable<Schemas.AuditEvent['door']> => DOORS.includes(value);

function serializeEvent(event: IAuditEvent, handleOf: Map<string, string>): Schemas.AuditEvent {
  const { door, requestId, ...details } = event.details as Record<string, unknown>;
  const userId = event.actorUser?.id;
  return {
    id: event.id,
    occurredAt: event.occurredAt.toISOString(),
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId ?? null,
    actor: {
      user: userId ? (handleOf.get(userId) ?? null) : null,
      tokenId: event.actorTokenId ?? null,
      clientId: event.actorClientId ?? null,
    },
    door: isDoor(door) ? door : null,
    ip: event.ip ?? null,
    userAgent: event.userAgent ?? null,
    requestId: typeof requestId === 'string' && requestId !== '' ? requestId : null,
    details,
  };
}

export const auditHandlers = {
  async listAuditEvents(op) {
    const request = pageRequest(op.query);
    const where: Record<string, unknown> = { account: op.target!.accountId };
    if (request.afterId) where.id = { $gt: request.afterId };
    if (op.query.action) where.action = op.query.action;
    if (op.query.since || op.query.until) {
      where.occurredAt = {
        ...(op.query.since ? { $gte: new Date(op.query.since) } : {}),
        ...(op.query.until ? { $lt: new Date(op.query.until) } : {}),
      };
    }
    if (op.query.actor) {
      const actor = await op.em.findOne(
        Account,
        { handle: op.query.actor, kind: 'user' },
        { fields: ['user'] },
      );
      // An unknown person did nothing here: an empty page, not a 404 that would tell who exists.
      if (!actor?.user) return { status: 200, body: { items: [], nextCursor: null } };
      where.actorUser = actor.user.id;
    }
    // Time-ordered ids (UUIDv7): id order is the order events were recorded in.
    const rows = await op.em.find(AuditEvent, where, { orderBy: { id: 'asc' }, limit: request.limit + 1 });
    const handleOf = await userHandles(
      op.em,
      rows.map((e) => e.actorUser?.id),
    );
    return { status: 200, body: page(rows, request, (e) => serializeEvent(e, handleOf)) };
  },
} satisfies Partial<Handlers>;
