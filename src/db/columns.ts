import { type EntityName, ReferenceKind } from '@mikro-orm/core';
import type { Orm } from './orm.ts';

/**
 * A timestamp as the API's ISO 8601 text, made by PostgreSQL: parsing it into a Date and formatting that
 * again cost Node about half a microsecond per value, PostgreSQL a tenth of that. Both keep milliseconds by
 * truncation, so the text is what `toISOString()` of the entity's Date gives.
 */
export const isoTimestamp = (expression: string): string =>
  `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** An entity's row as a plain read answers it: its timestamps already as the ISO 8601 text isoTimestamp made. */
export type PlainRow<T> = { [K in keyof T]: PlainValue<T[K]> };
/** Distributes over a union, so a nullable timestamp reads as text or null. */
type PlainValue<V> = V extends Date ? string : V;

/** An entity's timestamp (a Date) or a plain row's (its ISO 8601 text), as the API sends it. */
export const isoTime = (value: Date | string): string =>
  typeof value === 'string' ? value : value.toISOString();

/**
 * The columns of an entity's table, by their database names, as MikroORM's metadata has them: what a plain
 * statement selects when it maps its row to the entity (`em.map`) and must not say `select *` (a prepared
 * statement, src/db/prepared.ts).
 */
export function tableColumns<T extends object>(orm: Orm, entity: EntityName<T>): string[] {
  return orm
    .getMetadata()
    .get(entity)
    .props.filter(
      (prop) =>
        prop.persist !== false &&
        (prop.kind === ReferenceKind.SCALAR ||
          prop.kind === ReferenceKind.MANY_TO_ONE ||
          (prop.kind === ReferenceKind.ONE_TO_ONE && prop.owner)),
    )
    .flatMap((prop) => prop.fieldNames ?? []);
}
