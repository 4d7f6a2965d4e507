import type { Model } from 'mongoose';
import { decodeCursor, encodeCursor } from './cursors';
import { badRequest } from './errors';

/**
 * Keyset (cursor) paging (docs/decisions/0302-keyset-paging.md, 0331): a list sorted by a field —
 * usually a date, newest first — and then `_id` in the same direction is read one page at a time;
 * the next page starts after the last row's `(value, _id)`, which the cursor carries (signed and
 * bound to its list by `core/cursors.ts`). A row written while a client pages never shifts the rows
 * it has not seen yet, as an offset would.
 */
export interface Keyset {
  /** The field the list is sorted by (`createdAt`, `receivedAt`…, or a name or a size); `_id` breaks ties. */
  field: string;
  /** The list a cursor belongs to (its filter, its owner): a cursor of another list is refused. */
  binding: string;
  /** Reads a cursor; default `decodeCursor` (400 `invalid_cursor`). An area with its own error passes its own. */
  decode?: (cursor: string, binding: string) => Record<string, unknown>;
  /** `1` for oldest (smallest) first; default `-1`, newest first. */
  order?: 1 | -1;
  /** How the cursor spells its position; default `{s: ISO time, i: id}` (`POSITION`). */
  position?: Spelling;
}

/**
 * How a cursor spells the position of a page's last row: the key of the sort field's value, the key
 * of its id, and the value's form — `iso` a date as ISO 8601 text, `ms` a date as milliseconds,
 * `raw` the value as it is (a list sorted by a name or a size). A list that issued cursors before
 * it used this helper keeps its own spelling, so its cursors stay valid.
 */
export interface Spelling {
  value: string;
  id: string;
  form: 'iso' | 'ms' | 'raw';
}

/** The spelling of a list that names none: `{s: ISO time, i: id}`. */
export const POSITION: Spelling = { value: 's', id: 'i', form: 'iso' };

export interface KeysetPage<T> {
  items: T[];
  /** More rows follow this page. */
  hasMore: boolean;
  /** The cursor of the next page; null on the last one. */
  nextCursor: string | null;
}

/** The sort field's value a cursor holds, or undefined when it holds none in its spelling's form. */
function valueOf(spelling: Spelling, v: unknown): unknown {
  if (spelling.form === 'raw') return v;
  if (spelling.form === 'ms') return typeof v === 'number' && Number.isFinite(v) ? new Date(v) : undefined;
  return typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v) : undefined;
}

/** The filter that continues a list after `cursor` (nothing for the first page). */
export function keysetAfter(keyset: Keyset, cursor: string | null | undefined): Record<string, unknown> {
  if (!cursor) return {};
  const spelling = keyset.position ?? POSITION;
  const p = (keyset.decode ?? decodeCursor)(cursor, keyset.binding);
  const at = valueOf(spelling, p[spelling.value]);
  const id = p[spelling.id];
  if (typeof id !== 'string' || (at === undefined && spelling.form !== 'raw')) {
    throw badRequest('invalid_cursor', 'cursor is malformed');
  }
  const op = keyset.order === 1 ? '$gt' : '$lt';
  return { $or: [{ [keyset.field]: { [op]: at } }, { [keyset.field]: at, _id: { [op]: id } }] };
}

/** The sort of a keyset list: its field, then `_id`, newest first unless the list says otherwise. */
export function keysetSort(keyset: Keyset): Record<string, 1 | -1> {
  const order = keyset.order ?? -1;
  return { [keyset.field]: order, _id: order };
}

/** The position of `row` in `spelling` (a missing date gives none). */
function positionOf(spelling: Spelling, at: unknown, id: string): Record<string, unknown> | null {
  if (spelling.form === 'raw') return { [spelling.value]: at, [spelling.id]: id };
  if (!at) return null;
  const time = new Date(at as Date);
  return { [spelling.value]: spelling.form === 'ms' ? time.getTime() : time.toISOString(), [spelling.id]: id };
}

/** The page of `rows` read with a limit of `limit + 1`: the first `limit`, and the cursor after the last when more followed. */
export function keysetPage<T extends { _id: string }>(keyset: Keyset, rows: T[], limit: number): KeysetPage<T> {
  const hasMore = rows.length > limit;
  const items = rows.slice(0, limit);
  const last = items[items.length - 1] as (T & Record<string, unknown>) | undefined;
  const position = hasMore && last ? positionOf(keyset.position ?? POSITION, last[keyset.field], last._id) : null;
  return { items, hasMore, nextCursor: position ? encodeCursor(position, keyset.binding) : null };
}

/** Both conditions, whether or not `filter` has an `$or` of its own. */
function and(filter: Record<string, unknown>, after: Record<string, unknown>): Record<string, unknown> {
  if (!after.$or) return filter;
  return filter.$or ? { $and: [filter, after] } : { ...filter, ...after };
}

/**
 * One page of `model`: the rows matching `filter` after `cursor`, in `keyset.order` by `keyset.field`,
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
