import { v7 } from 'uuid';

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then a counter and random bits. Time-ordered
 * keys keep B-tree inserts local and make "newest first" a primary-key order, which cursor pagination relies
 * on; the `uuid` package keeps ids made within one millisecond in order too (RFC 9562's monotonic counter),
 * so two rows created in the same millisecond still list in the order they were made.
 */
export const uuidv7 = (): string => v7();

/** A UUID as our ids are written: 8-4-4-4-12 hex digits, no braces, no `urn:uuid:` prefix. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
