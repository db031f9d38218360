import {
  CheckConstraintViolationException,
  DeadlockException,
  DriverException,
  ForeignKeyConstraintViolationException,
  UniqueConstraintViolationException,
} from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OpenAPIBackend } from 'openapi-backend';
import type { Operations } from '../../generated/operations.gen.ts';
import { type Authenticator, CREDENTIAL_EPOCH_SUBQUERY, type FoundCaller } from '../authz/authenticator.ts';
import type { Caller, Door } from '../authz/caller.ts';
import type { Policy, Role } from '../authz/policy.ts';
import { type AccountFacts, resolveRoles } from '../authz/roles.ts';
import type { ServiceContext } from '../context.ts';
import { tableColumns } from '../db/columns.ts';
import { Account, type IAccount } from '../db/entities/index.ts';
import { type PreparedStatement, prepared } from '../db/prepared.ts';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  DATABASE_UNAVAILABLE_DETAIL,
  isDatabaseUnavailable,
} from '../db/unavailable.ts';
import { recordAudit } from '../domain/audit.ts';
import { InvalidInput } from '../domain/errors.ts';
import { findTextIssues } from '../lib/text-input.ts';
import type { Catalogue, OperationSpec } from './catalogue.ts';
import { constraintName, describeConstraint } from './constraint-messages.ts';
import { Problem, type ProblemBody, problems } from './problem.ts';

// The one path every operation takes, from REST or MCP alike:
//   authenticate -> scope ceiling -> validate -> resolve target and roles -> policy -> handler.

export interface OperationRequest {
  operationId: string;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  /** Lower-case header names; only the ones operations read (if-match, if-none-match). */
  headers: Record<string, string | undefined>;
  bearer: string | undefined;
  /**
   * Set by a door that already looked the bearer up (MCP does, once per HTTP request) or has a caller of its
   * own (the web pages' session); the pipeline then does not look it up again. A caller found in the cache
   * (`cachedAtEpoch` set) is still confirmed here before anything is decided on it.
   */
  found?: FoundCaller;
  door: Door;
  meta: { ip?: string; userAgent?: string; requestId?: string };
}

export interface OperationResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Every operation of openapi.yaml, by operationId. */
type OperationId = keyof Operations;
type RequestOf<K extends OperationId> = Operations[K]['data'];
type SuccessesOf<K extends OperationId> = Operations[K]['responses'];

/** The request parts of one operation, typed from its schemas in openapi.yaml (via the generated SDK types). */
interface TypedParts<K extends OperationId> {
  params: NonNullable<RequestOf<K>['path']>;
  query: NonNullable<RequestOf<K>['query']>;
  body: RequestOf<K>['body'];
}

/** The request parts as helpers shared by several operations see them. */
interface AnyParts {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

/**
 * MikroORM's `execute`: rows for 'all' (the default), the first row for 'get', the result for 'run'. A
 * prepared statement (src/db/prepared.ts) answers rows, prepared on a pooled connection for a read and
 * through the transaction for a write.
 */
export type PlainStatement = <T = Record<string, unknown>[]>(
  query: string | PreparedStatement,
  params?: readonly unknown[],
  method?: 'all' | 'get' | 'run',
) => Promise<T>;

/** What a handler receives: validated input, the caller, and the target account it was authorized for. */
export type OperationContext<K extends OperationId | undefined = undefined> = ContextBase &
  (K extends OperationId ? TypedParts<K> : AnyParts);

interface ContextBase {
  service: ServiceContext;
  /**
   * The operation's EntityManager: the write's transaction, or for a read a fork made when first asked
   * for (a read that answers from plain rows never makes one).
   */
  em: EntityManager;
  /**
   * One plain statement, for what a handler answers from rows rather than entities: in the write's
   * transaction, or for a read on a pooled connection, with no EntityManager made for it.
   */
  sql: PlainStatement;
  caller: Caller;
  /** The account named by the operation's x-account-param, with the caller's roles on it. */
  target: Target | undefined;
  ifMatch: string | undefined;
  /** The If-None-Match of a conditional read (see notModified in etag.ts). */
  ifNoneMatch: string | undefined;
  spec: OperationSpec;
  policy: Policy;
  /** What the operation's preflight returned (Preflights), if it has one. */
  preflight?: unknown;
  /**
   * Records an audit event in the operation's transaction, on the target account unless `account` names
   * another (an operation without x-account-param that acts on an organization: create, accept).
   */
  audit(
    action: string,
    resourceType: string,
    resourceId: string | null,
    details?: Record<string, unknown>,
    account?: IAccount,
  ): void;
}

/**
 * A problem the handler answers instead of throwing, because what it did on the way must commit (an
 * invitation found lapsed is marked expired, then the caller gets 410).
 */
export interface ProblemResponse {
  status: number;
  body: ProblemBody;
  headers?: Record<string, string>;
}

/** One of the operation's success responses as openapi.yaml declares them (errors are thrown as problems). */
type HandlerResponse<K extends OperationId> = K extends OperationId ? SuccessOf<K> : never;

type SuccessOf<K extends OperationId> = {
  [S in keyof SuccessesOf<K>]: SuccessesOf<K>[S] extends void
    ? { status: S; body?: undefined; headers?: Record<string, string> }
    : { status: S; body: SuccessesOf<K>[S]; headers?: Record<string, string> };
}[keyof SuccessesOf<K>];

/** The answer to a conditional read (If-None-Match) whose tag names the current version: no body. */
export interface NotModifiedResponse {
  status: 304;
  body?: undefined;
  headers: { ETag: string };
}

type OperationHandler<K extends OperationId> = (
  op: OperationContext<K>,
) => Promise<HandlerResponse<K> | ProblemResponse | NotModifiedResponse>;

/** A handler for every operation and nothing else; the type-check fails on a missing or unknown one. */
export type Handlers = { [K in OperationId]: OperationHandler<K> };

/**
 * What a write waits on the network for (an issuer's discovery document, a DNS lookup), done before its
 * transaction opens: inside it, the wait would hold a connection of the pool and the rows the transaction
 * locked for as long as the other side takes, and a few such requests at once (an issuer that answers
 * slowly, which anyone who can create an organization can set) would stall the whole instance. It runs
 * after the caller is authorized and the request validated; what it returns reaches the handler as
 * `op.preflight`, and what it throws is the answer.
 */
export type Preflights = { [K in OperationId]?: (op: OperationContext<K>) => Promise<unknown> };

export interface Pipeline {
  execute(request: OperationRequest): Promise<OperationResponse>;
  /** The caller a bearer token stands for at this door; null when absent, unknown or not meant for it. */
  authenticate(bearer: string | undefined, door: Door): Promise<Caller | null>;
  /** The caller for a bearer, possibly from the cache and still to be confirmed (see Authenticator.find). */
  find: Authenticator['find'];
  /** A found caller made safe to act on, or null (see Authenticator.confirm). */
  confirm: Authenticator['confirm'];
  /**
   * Whether a role may use a scope, by the same policy the pipeline enforces: pages ask it so that they
   * do not offer what a person cannot do (the operation itself still decides when it runs).
   */
  allows(role: Role | null | undefined, scope: string): boolean;
  /** The policy the pipeline enforces (for the token ceiling's list of what a person may grant). */
  policy: Policy;
  catalogue: Catalogue;
}

export interface PipelineDeps {
  service: ServiceContext;
  catalogue: Catalogue;
  api: OpenAPIBackend;
  policy: Policy;
  handlers: Handlers;
  preflights?: Preflights;
  authenticator: Authenticator;
  /** `WWW-Authenticate` value for a 401 or 403 at this door, naming the scope needed. */
  challenge(door: Door, scope: string, error?: 'invalid_token' | 'insufficient_scope'): string;
}

// Every operation on an account reads it, and with it, in the same statement, the caller's membership role
// there (organizations only) and the credential epoch that confirms a cached caller (authenticator.ts).
// Prepared (src/db/prepared.ts), so its columns are named, from the entity's metadata, once.
function targetAccountStatement(orm: ServiceContext['orm']): PreparedStatement {
  const columns = tableColumns(orm, Account).map((column) => `a."${column}"`);
  return prepared(`select ${columns.join(', ')},
    (select m.role from memberships m join organizations o on o.id = m.organization_id
      where o.account_id = a.id and m.user_id = ?) as caller_membership_role,
    ${CREDENTIAL_EPOCH_SUBQUERY} as credential_epoch
  from accounts a where a.handle = ?`);
}

/**
 * The account an operation acts on. Its id and handle are plain fields; the managed entity is built on
 * first use for a read (most reads need only the id, and mapping a row into MikroORM's identity map costs
 * about a tenth of a read's CPU), and before the handler runs for a write, so the write's transaction
 * inherits it as managed.
 */
interface Target {
  accountId: string;
  handle: string;
  kind: IAccount['kind'];
  readonly account: IAccount;
  roles: Set<Role>;
}

interface TargetAccountRow extends Record<string, unknown> {
  caller_membership_role: 'admin' | 'member' | null;
  credential_epoch: string;
}

export function createPipeline(deps: PipelineDeps): Pipeline {
  const { service, catalogue, policy, handlers } = deps;
  for (const id of catalogue.operations.keys()) {
    if (!(id in handlers))
      throw new Error(`openapi.yaml operation ${id} has no handler in src/api/resources`);
  }
  for (const id of Object.keys(handlers)) {
    if (!catalogue.operations.has(id)) throw new Error(`handler ${id} has no operation in openapi.yaml`);
  }

  const { authenticator } = deps;
  const targetAccount = targetAccountStatement(service.orm);

  async function run(request: OperationRequest): Promise<OperationResponse> {
    const spec = catalogue.operations.get(request.operationId);
    if (!spec) throw problems.notFound(`Unknown operation ${request.operationId}`);
    // A fork and its unit of work cost a request more than its plain statements do, and most of what a list
    // request keeps alive through a young-generation collection (docs/performance.md): made on first use.
    let forked: EntityManager | undefined;
    const em = () => (forked ??= service.orm.em.fork());
    // The statements before the handler are plain reads: no unit of work, no transaction.
    const connection = service.orm.em.getConnection();

    const refuse = (error?: 'invalid_token'): never => {
      const detail = !request.bearer
        ? 'Send a bearer token in the Authorization header.'
        : 'The bearer token is invalid, expired, revoked or not meant for this resource.';
      throw problems.unauthorized(detail, deps.challenge(request.door, spec.scope, error));
    };
    // A door may hand over what it found already (MCP looks the bearer up once per HTTP request; the web
    // pages have the session's caller). A caller from the cache, found here or by the door, is confirmed
    // before anything is decided on it: here at once when the operation names no account, or else by the
    // epoch that the account's statement brings along.
    let found: FoundCaller | null = request.found ?? (await authenticator.find(request.bearer, request.door));
    if (!found) return refuse(request.bearer ? 'invalid_token' : undefined);
    const confirm = async (currentEpoch?: string): Promise<Caller> => {
      if (found?.cachedAtEpoch === undefined) return found!.caller;
      const caller = await authenticator.confirm(request.bearer!, request.door, found, currentEpoch);
      found = caller ? { caller } : null;
      return caller ?? refuse('invalid_token');
    };
    const checkScope = (caller: Caller) => {
      if (caller.scopes.has(spec.scope)) return;
      throw problems.insufficientScope(
        `This operation needs the ${spec.scope} scope, which the token does not hold.`,
        deps.challenge(request.door, spec.scope, 'insufficient_scope'),
      );
    };
    let caller = !spec.accountParam || !found.caller.scopes.has(spec.scope) ? await confirm() : found.caller;
    checkScope(caller);

    let parts: ReturnType<typeof validate>;
    try {
      parts = validate(spec, request);
    } catch (error) {
      await confirm(); // a revoked token hears 401, not what is wrong with its request
      throw error;
    }
    const { params, query } = parts;

    const [object, action] = spec.scope.split(':') as [string, string];
    const write = spec.method !== 'get';
    let target: OperationContext['target'];
    /** The membership a write's permission came from, held until it commits (holdMembership). */
    let heldMembership: HeldMembership | undefined;
    if (spec.accountParam) {
      const handle = request.params[spec.accountParam]!;
      // One prepared statement; the row becomes a managed entity (em.map) only when a handler asks for it.
      const [row] = await service.runPrepared<TargetAccountRow>(targetAccount, [caller.userId, handle]);
      // Reading the account asked the database for the credential epoch: a cached caller is confirmed (or
      // verified again) before the answer depends on it. The same token always means the same user, so
      // the membership role read above stays right.
      caller = await confirm(row?.credential_epoch);
      checkScope(caller);
      if (!row) throw problems.notFound(`No account "${handle}", or you cannot see it.`);
      const { caller_membership_role: membershipRole, credential_epoch: _epoch, ...accountRow } = row;
      const roles = await resolveRoles(connection, caller, accountFacts(accountRow), membershipRole);
      if (!policy.allows(roles, object, action)) {
        // Existence does not leak: only a caller who can see the account learns that it exists, and a
        // denied read (any GET, whatever its scope's action) answers as if there were nothing to read there.
        if (roles.size === 0) throw problems.notFound(`No account "${handle}", or you cannot see it.`);
        if (!write)
          throw problems.notFound(
            `Nothing to show in "${handle}": your role there does not allow ${spec.scope}, which this read needs.`,
          );
        throw problems.forbidden(`Your role on "${handle}" does not allow ${spec.scope}.`);
      }
      if (write && membershipRole !== null) {
        // A write that changes memberships itself (a role, a removal, the whole organization's) holds the
        // caller's for update from the start: held for share, two of them at once each waited for the
        // other's share to be released before changing a membership row, a deadlock each time.
        const exclusive = object === 'members' || spec.scope === 'organization:delete';
        heldMembership = { accountId: accountRow.id as string, role: membershipRole, exclusive };
      }
      let account: IAccount | undefined = spec.method === 'get' ? undefined : em().map(Account, accountRow);
      target = {
        accountId: accountRow.id as string,
        handle: accountRow.handle as string,
        kind: accountRow.kind as IAccount['kind'],
        get account() {
          account ??= em().map(Account, accountRow);
          return account;
        },
        roles,
      };
    } else if (caller.restrictedToAccountId) {
      // A token bound to one organization may still read the caller-wide lists (its handlers narrow them
      // to that organization), so an agent holding one can start with list_accounts; anything else that
      // is not about a named account (the profile, new organizations, OAuth apps) needs a personal token.
      const account = await em().findOneOrFail(Account, { id: caller.restrictedToAccountId });
      const roles = await resolveRoles(connection, caller, {
        ...account,
        userId: account.user?.id ?? null,
      });
      if (action !== 'read' || spec.scope === 'user:read' || !policy.allows(roles, object, action)) {
        throw problems.forbidden(
          `This token is limited to the organization "${account.handle}"; ${spec.scope} here needs a personal token.`,
        );
      }
    } else if (!policy.allows(['self'], object, action)) {
      throw problems.forbidden(`${spec.scope} is not something you can do on your own account.`);
    }

    // The request was validated against this operation's schemas just above: that is what makes its parts
    // the typed parts the handler was written for.
    const handler = handlers[spec.operationId as OperationId] as unknown as (
      op: OperationContext,
    ) => Promise<OperationResponse>;
    /** The handler's context: in the write's transaction `tx`, or outside any (a read, or a preflight). */
    const contextOf = (tx?: EntityManager, preflight?: unknown, ownEm?: EntityManager): OperationContext => {
      const sql: PlainStatement = <T>(
        query: string | PreparedStatement,
        params: readonly unknown[] = [],
        method: 'all' | 'get' | 'run' = 'all',
      ) => {
        // The EntityManager's execute takes a mutable array (the connection's a readonly one).
        if (tx)
          return tx.execute(
            typeof query === 'string' ? query : query.text,
            [...params],
            method,
          ) as Promise<T>;
        if (typeof query === 'string') return connection.execute(query, params, method) as Promise<T>;
        const rows = service.runPrepared(query, params);
        return (method === 'get' ? rows.then((found) => found[0]) : rows) as Promise<T>;
      };
      return {
        service,
        get em() {
          return tx ?? ownEm ?? em();
        },
        sql,
        caller,
        target,
        params,
        query,
        body: request.body,
        ifMatch: request.headers['if-match'],
        ifNoneMatch: request.headers['if-none-match'],
        spec,
        policy,
        preflight,
        audit(auditAction, resourceType, resourceId, details = {}, account = target?.account) {
          recordAudit(tx ?? em(), caller, {
            action: auditAction,
            resourceType,
            resourceId,
            account: account ?? null,
            details,
            door: request.door,
            meta: request.meta,
          });
        },
      };
    };
    // What the operation waits on the network for comes first, outside the transaction (Preflights), on an
    // EntityManager of its own, so that nothing it loads is managed by the write's.
    const preflight = deps.preflights?.[spec.operationId as OperationId] as
      | ((op: OperationContext) => Promise<unknown>)
      | undefined;
    const preflightResult = preflight
      ? await preflight(contextOf(undefined, undefined, service.orm.em.fork()))
      : undefined;
    return write
      ? em().transactional(async (tx) => {
          if (heldMembership) await holdMembership(tx, caller.userId, heldMembership);
          return handler(contextOf(tx, preflightResult));
        })
      : handler(contextOf(undefined, preflightResult));
  }

  /**
   * Checks the request against the operation's schemas with openapi-backend's precompiled validators,
   * on the parts as both doors already hold them (no second routing pass), and returns path and query
   * coerced to their schema types (`limit=2` arrives as the number 2).
   */
  function validate(spec: OperationSpec, request: OperationRequest) {
    const parameters: Record<string, unknown> = {
      path: { ...request.params },
      query: { ...request.query },
      header: Object.fromEntries(Object.entries(request.headers).filter(([, value]) => value !== undefined)),
    };
    if (request.body !== undefined) parameters.requestBody = request.body;
    // Characters no field accepts (NUL, other control characters, lone surrogates) are one rule for every
    // string the client sends, checked here rather than as a pattern on each field of openapi.yaml.
    const textIssues = [
      ...findTextIssues(request.params, '/params'),
      ...findTextIssues(request.query, '/query'),
      ...numeralIssues(spec, request.query),
      ...findTextIssues(parameters.header, '/headers'),
      ...findTextIssues(request.body, '/body'),
    ];
    const errors = deps.api.validator.getRequestValidatorsForOperation(spec.operationId).flatMap((check) => {
      check(parameters);
      return check.errors ?? [];
    });
    if (errors.length > 0 || textIssues.length > 0) {
      throw problems.validation([
        ...textIssues,
        ...errors.map((e) =>
          // openapi-backend holds the body as `requestBody`: a missing one is the body, not a field of it.
          e.instancePath === '' &&
          (e.params as { missingProperty?: unknown }).missingProperty === 'requestBody'
            ? { pointer: '/body', message: 'is required: send it as JSON' }
            : {
                pointer: toPointer(e.instancePath, e.params as Record<string, unknown>),
                message: validationMessage(e),
              },
        ),
      ]);
    }
    return {
      params: parameters.path as Record<string, string>,
      query: parameters.query as Record<string, unknown>,
    };
  }

  /**
   * A write whose transaction lost a race with another one (a deadlock, or a row it refers to deleted
   * after it was read, such as the account of a save while the organization is deleted) is run again
   * from the start: nothing of it was committed, and the next attempt sees what the other transaction
   * did, so its answer is the one it would have had arriving second (the account is gone: 404).
   */
  async function runSettlingRaces(request: OperationRequest): Promise<OperationResponse> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run(request);
      } catch (error) {
        const lost = lostRace(asDriverException(error, service));
        if (attempt >= RACE_ATTEMPTS || !lost) throw error;
        service.metrics.operationRetried(request.operationId, lost);
        service.logger.debug(
          { operationId: request.operationId, attempt, reason: (error as Error).message },
          'operation lost a race, running it again',
        );
      }
    }
  }

  return {
    catalogue,
    authenticate: authenticator.authenticate,
    find: authenticator.find,
    confirm: authenticator.confirm,
    policy,
    allows(role, scope) {
      const [object, action] = scope.split(':') as [string, string];
      return role ? policy.allows([role], object, action) : false;
    },
    async execute(request) {
      try {
        const response = await runSettlingRaces(request);
        service.logger.debug(
          { operationId: request.operationId, door: request.door, status: response.status },
          'operation',
        );
        return response;
      } catch (error) {
        return toProblemResponse(error, service, {
          operationId: request.operationId,
          requestId: request.meta.requestId,
        });
      }
    },
  };
}

/**
 * Ajv's coercion reads a query value as JavaScript's Number() does, so `limit=0x10` or `limit= 1e1` would be
 * a page size; an integer in a query string is written in decimal digits, and anything else is refused.
 */
function numeralIssues(spec: OperationSpec, query: Record<string, unknown>) {
  return spec.integerQueryParams.flatMap((name) => {
    const value = query[name];
    return typeof value === 'string' && !/^-?\d+$/.test(value)
      ? [{ pointer: `/query/${name}`, message: 'must be a whole number written in decimal digits' }]
      : [];
  });
}

/** What role resolution reads of an account, from its raw row (snake_case columns). */
function accountFacts(row: Record<string, unknown>): AccountFacts {
  return {
    id: row.id as string,
    kind: row.kind as AccountFacts['kind'],
    visibility: row.visibility as AccountFacts['visibility'],
    userId: (row.user_id as string | null) ?? null,
  };
}

/** Ajv's words, but an enum names its values (Ajv says only "must be equal to one of the allowed values"). */
function validationMessage(error: { keyword: string; params: unknown; message?: string }): string {
  const allowed = (error.params as { allowedValues?: unknown[] }).allowedValues;
  if (error.keyword === 'enum' && Array.isArray(allowed))
    return `must be one of ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
  // A name must hold something to read (openapi.yaml's `pattern: "\S"`), said as such.
  if (error.keyword === 'pattern' && (error.params as { pattern?: unknown }).pattern === '\\S')
    return 'must not be blank';
  return error.message ?? 'is invalid';
}

// openapi-backend reports `/requestBody/name` or `/query/limit`; clients see pointers into what they sent.
function toPointer(instancePath: string, params: Record<string, unknown>): string {
  let pointer = instancePath.replace(/^\/requestBody/, '/body').replace(/^\/path\b/, '/params') || '/body';
  // A property's name as a pointer segment (RFC 6901): `a/b` is `a~1b`, `a~b` is `a~0b`, and an empty
  // name an empty segment, as Ajv writes the instance path itself.
  const segment = (name: string) => name.replaceAll('~', '~0').replaceAll('/', '~1');
  if (typeof params.missingProperty === 'string') pointer = `${pointer}/${segment(params.missingProperty)}`;
  if (typeof params.additionalProperty === 'string')
    pointer = `${pointer}/${segment(params.additionalProperty)}`;
  return pointer;
}

// A check constraint that guards a state transition (not the shape of input) is a conflict, not a 400.
const CONFLICT_CHECKS = new Set(['memberships_last_admin']);

/** Runs of an operation that keeps losing races before its answer says so (409). */
const RACE_ATTEMPTS = 3;

/**
 * How a write lost a race with another transaction (a deadlock, a row deleted under it, the caller's
 * membership changed before it), which running it again settles; undefined when the failure is its own.
 */
function lostRace(error: unknown): 'deadlock' | 'row-gone' | 'membership-changed' | undefined {
  if (error instanceof DeadlockException) return 'deadlock';
  if (error instanceof ForeignKeyConstraintViolationException) return 'row-gone';
  if (error instanceof MembershipChanged) return 'membership-changed';
  return undefined;
}

/** The caller's membership changed between the permission check and the write's transaction. */
class MembershipChanged extends Error {}

interface HeldMembership {
  accountId: string;
  role: string;
  /** Locked for update rather than for share: the write changes memberships. */
  exclusive: boolean;
}

const CALLER_MEMBERSHIP = `select m.role from memberships m join organizations o on o.id = m.organization_id
  where o.account_id = ? and m.user_id = ?`;

/**
 * A write on an organization that the caller may make as a member holds that membership (a share lock)
 * until it commits, and goes ahead only if it is still the one the permission was decided on. Ending or
 * changing a membership locks it for update, so the two take turns: a token or invitation made by an
 * admin being removed either commits first (and the removal, which then sees it, revokes it) or finds
 * the membership gone or changed and runs again from the start, where it gets the answer a request
 * arriving after the removal gets (404, or 403 after a demotion).
 */
async function holdMembership(tx: EntityManager, userId: string, held: HeldMembership): Promise<void> {
  // Changes of memberships take their turn per organization first (members.ts, leaving, does the same):
  // each locking the membership it starts from, two of them (a demotion and the demoted admin leaving)
  // waited for each other's row, a deadlock PostgreSQL takes a second to break. The organization's row is
  // locked without blocking the key-share locks that inserting an invitation or a membership takes on it.
  if (held.exclusive)
    await tx.execute('select 1 from organizations where account_id = ? for no key update', [held.accountId]);
  const lock = held.exclusive ? 'for update of m' : 'for share of m';
  const [row] = await tx.execute<{ role: string }[]>(`${CALLER_MEMBERSHIP} ${lock}`, [
    held.accountId,
    userId,
  ]);
  if (row?.role !== held.role) throw new MembershipChanged('the membership changed before the write');
}

/**
 * The driver's error as MikroORM's exception class. Deferred constraints (memberships_last_admin) fail at
 * COMMIT, where the driver's raw error is not converted; converted here, it maps like an immediate one.
 */
function asDriverException(error: unknown, service: ServiceContext): unknown {
  if (
    error instanceof Error &&
    !(error instanceof DriverException) &&
    typeof (error as { code?: unknown }).code === 'string'
  ) {
    return service.orm.em.getDriver().convertException(error);
  }
  return error;
}

/** The answer of an operation the database being away stopped: 503 with Retry-After. */
export function databaseUnavailableResponse(): OperationResponse {
  const problem = problems.serviceUnavailable(DATABASE_UNAVAILABLE_DETAIL, DATABASE_RETRY_AFTER_SECONDS);
  return { status: problem.status, body: problem.toJSON(), headers: problem.headers };
}

function toProblemResponse(
  error: unknown,
  service: ServiceContext,
  context: { operationId: string; requestId?: string },
): OperationResponse {
  // The database is away (restarting, failing over): nothing was committed, and retrying shortly works.
  if (isDatabaseUnavailable(error)) {
    service.logger.warn({ ...context, reason: (error as Error).message }, 'database unavailable');
    return databaseUnavailableResponse();
  }
  error = asDriverException(error, service);
  let problem: Problem;
  if (error instanceof Problem) problem = error;
  else if (error instanceof InvalidInput) problem = problems.badRequest(error.message, error.pointer);
  else if (error instanceof UniqueConstraintViolationException)
    problem = problems.conflict(describeConstraint(error));
  else if (error instanceof CheckConstraintViolationException) {
    const detail = describeConstraint(error);
    problem = CONFLICT_CHECKS.has(constraintName(error))
      ? problems.conflict(detail)
      : problems.badRequest(detail);
  } else if (error instanceof DeadlockException || error instanceof MembershipChanged) {
    // Still deadlocked after RACE_ATTEMPTS runs: nothing was saved, and the client may simply retry.
    service.logger.warn({ ...context, reason: error.message }, 'operation kept losing races');
    problem = problems.conflict(
      'The change collided with other changes to the same data and was not saved; send it again.',
    );
  } else {
    service.logger.error({ err: error, ...context }, 'operation failed');
    problem = problems.internal();
  }
  return { status: problem.status, body: problem.toJSON(), headers: problem.headers };
}
