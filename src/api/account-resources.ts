// Reads shared by the resources an account owns (projects, models): a page of them, and one of them by
// handle, always scoped to the account the pipeline authorized.
import { type EntityName, LockMode, ReferenceKind } from '@mikro-orm/core';
import { isoTimestamp, type PlainRow } from '../db/columns.ts';
import { type PreparedStatement, prepared } from '../db/prepared.ts';
import { keysetPages, page, pageRequest } from './pagination.ts';
import type { OperationContext } from './pipeline.ts';
import { problems } from './problem.ts';

type PlainRead = Pick<OperationContext, 'service' | 'sql' | 'query' | 'target'>;

/**
 * One page of the target account's rows of `entity`, oldest first, as plain rows (properties named as on the
 * entity, relations as their ids), for lists whose serializer reads only the row's own columns: no entity is
 * built, and no query is built either (the SQL is made once per entity from its metadata), which was most of
 * a list's CPU time.
 */
export async function findAccountRows<T extends { id: string }>(op: PlainRead, entity: EntityName<T>) {
  const statements = statementsOf(op.service.orm, entity);
  // Bound to the entity's table and the account: a projects cursor is not a models one.
  const request = pageRequest(op.query, statements.table, op.target!.accountId);
  const { statement, params } = statements.pages(op.target!.accountId, request);
  const fetched = await op.sql<PlainRow<T>[]>(statement, params);
  // Typed as the entity's row for the serializer's sake; a relation is only its id here, so a serializer
  // given these rows takes the row's own columns (a Pick of the entity) and nothing else.
  return { body: <U>(serialize: (row: PlainRow<T>) => U) => page(fetched, request, serialize) };
}

/**
 * The target account's row of `entity` with this handle as a plain row, for reads that only show it, or a
 * 404 naming what was looked for. A write that changes the row reads it with findByHandle instead.
 */
export async function findAccountRow<T extends { id: string }>(
  op: PlainRead,
  entity: EntityName<T>,
  handle: string,
  noun: string,
): Promise<PlainRow<T>> {
  const { byHandle } = statementsOf(op.service.orm, entity);
  const [row] = await op.sql<PlainRow<T>[]>(byHandle, [op.target!.accountId, handle]);
  if (!row) throw problems.notFound(`No ${noun} "${handle}" in "${op.target!.handle}".`);
  return row;
}

interface AccountRowStatements {
  /** The entity's table, which names its list (what a cursor is bound to). */
  table: string;
  pages: ReturnType<typeof keysetPages>;
  byHandle: PreparedStatement;
}
const statementsByEntity = new Map<unknown, AccountRowStatements>();

/**
 * The plain reads of an entity an account owns (`select <every own column as its property name> from
 * <table> where account_id = ? …`): its pages, and one row by handle; made once per entity.
 */
function statementsOf<T extends object>(orm: PlainRead['service']['orm'], entity: EntityName<T>) {
  let found = statementsByEntity.get(entity);
  if (!found) {
    const meta = orm.getMetadata().get(entity);
    const own = meta.props.filter(
      (prop) => prop.kind === ReferenceKind.SCALAR && prop.persist !== false && prop.fieldNames?.length === 1,
    );
    const columns = own.map((prop) => {
      const column = prop.fieldNames[0]!;
      // Timestamps as the API's text, formatted by PostgreSQL (two per row: cheaper there than in Node).
      return `${prop.runtimeType === 'Date' ? isoTimestamp(`"${column}"`) : `"${column}"`} as "${prop.name}"`;
    });
    const select = `select ${columns.join(', ')} from "${meta.tableName}" where account_id = ?`;
    found = {
      table: meta.tableName,
      pages: keysetPages(select, 'id'),
      byHandle: prepared(`${select} and handle = ?`),
    };
    statementsByEntity.set(entity, found);
  }
  return found;
}

/**
 * For a write: the target account's `entity` row with this handle, or a 404 naming what was looked for.
 * The row stays locked until the write commits, so a second update or delete of it waits and then sees
 * this one's outcome (a deleted row is a 404, and its audit event is written once).
 */
export async function findByHandle<T extends object>(
  op: Pick<OperationContext, 'em' | 'target'>,
  entity: EntityName<T>,
  handle: string,
  noun: string,
): Promise<T> {
  const account = op.target!.account;
  const row = await op.em.findOne(entity, { account: account.id, handle } as never, {
    lockMode: LockMode.PESSIMISTIC_WRITE,
  });
  if (!row) throw problems.notFound(`No ${noun} "${handle}" in "${account.handle}".`);
  return row as T;
}
