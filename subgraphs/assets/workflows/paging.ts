import type { Model } from 'mongoose';
import { badRequest } from '../../../core/errors';
import { findPage } from '../../../core/keyset';

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
  const page = await findPage<T>(model, filter, {
    field: 'createdAt',
    binding,
    position: { value: 't', id: 'id', form: 'ms' },
    limit,
    cursor,
  });
  return { items: page.items, nextCursor: page.nextCursor };
}
