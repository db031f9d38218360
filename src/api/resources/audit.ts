import type * as Schemas from '../../../generated/sdk/types.gen.ts';
import { isoTimestamp } from '../../db/columns.ts';
import { page, pageRequest } from '../pagination.ts';
import type { Handlers } from '../pipeline.ts';
import { problems } from '../problem.ts';

// The audit log is read-only through the service: this module lists events and nothing edits or deletes
// them (the database refuses that too; see the audit migration). Who may read whose events is the
// policy's audit:read: administrators for their organization, everyone for their own personal account.

const DOORS: readonly unknown[] = ['rest', 'mcp', 'web', 'cli'] satisfies Schemas.AuditEvent['door'][];
const isDoor = (value: unknown): value is NonNullable<Schemas.AuditEvent['door']> => DOORS.includes(value);

/** An event as the list reads it: a plain row, its time as ISO 8601 text and its actor as a handle. */
interface EventRow {
  id: string;
  occurredAt: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  actorHandle: string | null;
  actorTokenId: string | null;
  actorClientId: string | null;
  ip: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
}

function serializeEvent(event: EventRow): Schemas.AuditEvent {
  const { door, requestId, ...details } = event.details;
  return {
    id: event.id,
    occurredAt: event.occurredAt,
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    actor: { user: event.actorHandle, tokenId: event.actorTokenId, clientId: event.actorClientId },
    door: isDoor(door) ? door : null,
    ip: event.ip,
    userAgent: event.userAgent,
    requestId: typeof requestId === 'string' && requestId !== '' ? requestId : null,
    details,
  };
}

/** The earliest time PostgreSQL takes as written (it has no year 0000): no event is older. */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z'); // Date.UTC would read the year 1 as 1901

/**
 * A `since` / `until` bound as the instant it names. RFC 3339 (and the schema's `date-time` format) allows
 * a leap second, `23:59:60`, which JavaScript's Date does not read: it is the second after `:59`. A year
 * before 0001 (`0000-01-01T00:00:00Z`, a common "from the beginning") bounds nothing any event is older
 * than, so it reads as the earliest time PostgreSQL stores.
 */
function instant(text: string, pointer: string): Date {
  const leap = /^(.*[T ]\d\d:\d\d:)60(.*)$/i.exec(text);
  const time = leap ? Date.parse(`${leap[1]}59${leap[2]}`) + 1000 : Date.parse(text);
  if (Number.isNaN(time)) throw problems.badRequest('The time is not valid.', pointer);
  return new Date(Math.max(time, EARLIEST));
}

const EVENT_COLUMNS = `e.id, ${isoTimestamp('e.occurred_at')} as "occurredAt", e.action,
  e.resource_type as "resourceType", e.resource_id as "resourceId", actor.handle as "actorHandle",
  e.actor_token_id as "actorTokenId", e.actor_client_id as "actorClientId", e.ip,
  e.user_agent as "userAgent", e.details`;

export const auditHandlers = {
  async listAuditEvents(op) {
    const request = pageRequest(op.query, 'audit events', op.target!.accountId);
    // Only the filters given go into the statement, each with its value as a parameter, so the planner
    // sees the keyset condition as an index bound whatever else is asked.
    const conditions = ['e.account_id = ?'];
    const values: unknown[] = [op.target!.accountId];
    const where = (condition: string, value: unknown) => {
      conditions.push(condition);
      values.push(value);
    };
    if (request.afterId) where('e.id > ?', request.afterId);
    if (op.query.action) where('e.action = ?', op.query.action);
    if (op.query.since) where('e.occurred_at >= ?', instant(op.query.since, '/query/since'));
    if (op.query.until) where('e.occurred_at < ?', instant(op.query.until, '/query/until'));
    // An unknown person did nothing here: an empty page, not a 404 that would tell who exists.
    if (op.query.actor) {
      where(
        `e.actor_user_id = (select user_id from accounts where handle = ? and kind = 'user')`,
        op.query.actor,
      );
    }
    // Time-ordered ids (UUIDv7): id order is the order events were recorded in.
    const rows = await op.sql<EventRow[]>(
      `select ${EVENT_COLUMNS}
         from audit_events e left join accounts actor on actor.user_id = e.actor_user_id
        where ${conditions.join(' and ')}
        order by e.id limit ?`,
      [...values, request.limit + 1],
    );
    return { status: 200, body: page(rows, request, serializeEvent) };
  },
} satisfies Partial<Handlers>;
