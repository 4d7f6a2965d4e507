import type { Model } from 'mongoose';
import { decodeCursor, encodeCursor } from '../../../core/cursors';
import { badRequest } from '../../../core/errors';

/** List pages: `limit` 1..100, default 25 (the activity lists' numbers). */
export const DEFAULT_PAGE = 25;
export const MAX_PAGE = 100;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A page of a collection, newest first, with a cursor bound to `binding` (the list it belongs to). */
export async function pageOf<T extends { _id: string; createdAt: Date }>(
  model: Model<T>,
  filter: Record<string, unknown>,
  binding: string,
  limit = DEFAULT_PAGE,
  cursor?: string,
): Promise<Page<T>> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) throw badRequest('validation_failed', 'limit must be 1..100');
  const q: Record<string, unknown> = { ...filter };
  if (cursor) {
    const pos = decodeCursor<{ t: number; id: string }>(cursor, binding);
    q.$or = [{ createdAt: { $lt: new Date(pos.t) } }, { createdAt: new Date(pos.t), _id: { $lt: pos.id } }];
  }
  const rows = (await model
    .find(q)
    .sort({ createdAt: -1, _id: -1 })
    .limit(limit + 1)
    .lean()
    .exec()) as unknown as T[];
  const more = rows.length > limit;
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    items,
    nextCursor: more && last ? encodeCursor({ t: new Date(last.createdAt).getTime(), id: last._id }, binding) : null,
  };
}
