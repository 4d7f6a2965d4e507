import type { Model } from 'mongoose';
import { decodeCursor, encodeCursor } from './cursors';
import { badRequest } from './errors';

/**
 * Keyset (cursor) paging, newest first (docs/decisions/0302-keyset-paging.md): a list sorted by a
 * date field and then `_id`, both descending, is read one page at a time; the next page starts
 * after the last row's `(date, _id)`, which the cursor carries (signed and bound to its list by
 * `core/cursors.ts`). A row written while a client pages never shifts the rows it has not seen yet,
 * as an offset would.
 */
export interface Keyset {
  /** The date field the list is sorted by (`createdAt`, `receivedAt`…); `_id` breaks ties. */
  field: string;
  /** The list a cursor belongs to (its filter, its owner): a cursor of another list is refused. */
  binding: string;
  /** Reads a cursor; default `decodeCursor` (400 `invalid_cursor`). An area with its own error passes its own. */
  decode?: (cursor: string, binding: string) => Record<string, unknown>;
}

export interface KeysetPage<T> {
  items: T[];
  /** More rows follow this page. */
  hasMore: boolean;
  /** The cursor of the next page; null on the last one. */
  nextCursor: string | null;
}

/** What a cursor holds: the sort field's time (ISO 8601) and the id of the page's last row. */
interface Position {
  s: string;
  i: string;
}

/** The filter that continues a list after `cursor` (nothing for the first page). */
export function keysetAfter(keyset: Keyset, cursor: string | null | undefined): Record<string, unknown> {
  if (!cursor) return {};
  const p = (keyset.decode ?? decodeCursor)(cursor, keyset.binding) as Partial<Position>;
  if (typeof p.s !== 'string' || typeof p.i !== 'string' || Number.isNaN(Date.parse(p.s))) {
    throw badRequest('invalid_cursor', 'cursor is malformed');
  }
  const at = new Date(p.s);
  return { $or: [{ [keyset.field]: { $lt: at } }, { [keyset.field]: at, _id: { $lt: p.i } }] };
}

/** The sort of a keyset list: its field, then `_id`, newest first. */
export function keysetSort(keyset: Keyset): Record<string, -1> {
  return { [keyset.field]: -1, _id: -1 };
}

/** The page of `rows` read with a limit of `limit + 1`: the first `limit`, and the cursor after the last when more followed. */
export function keysetPage<T extends { _id: string }>(keyset: Keyset, rows: T[], limit: number): KeysetPage<T> {
  const hasMore = rows.length > limit;
  const items = rows.slice(0, limit);
  const last = items[items.length - 1] as (T & Record<string, unknown>) | undefined;
  const at = last?.[keyset.field];
  return {
    items,
    hasMore,
    nextCursor:
      hasMore && last && at ? encodeCursor({ s: new Date(at as Date).toISOString(), i: last._id }, keyset.binding) : null,
  };
}

/** Both conditions, whether or not `filter` has an `$or` of its own. */
function and(filter: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  if (!after.$or) return filter;
  return filter.$or ? { $and: [filter, after] } : { ...filter, ...after };
}

/**
 * One page of `model`: the rows matching `filter` after `cursor`, newest first by `keyset.field`,
 * at most `limit` (read as `limit + 1` to know whether more follow), with `projection` applied.
 */
export async function findPage<T extends { _id: string }>(
  model: Model<any>,
  filter: Record<string, unknown>,
  keyset: Keyset & { limit: number; cursor?: string | null; projection?: Record<string, 0 | 1> },
): Promise<KeysetPage<T>> {
  const rows = await model
    .find(and(filter, keysetAfter(keyset, keyset.cursor)), keyset.projection)
    .sort(keysetSort(keyset))
    .limit(keyset.limit + 1)
    .lean<T[]>()
    .exec();
  return keysetPage(keyset, rows, keyset.limit);
}
