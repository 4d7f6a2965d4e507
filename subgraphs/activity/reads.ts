import type { FilterQuery, Model } from 'mongoose';
import { PlatformError, badRequest, notFound } from '../../core/errors';
import { isUuid } from '../../core/ids';
import { findPage, keysetAfter, type KeysetPage } from '../../core/keyset';
import type { ActivityItemDoc, ActivityModels, AgentActionDoc } from './model';

/** Spec 8: `limit` 1–100, default 25; pending and current each capped at 1,000. */
export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;
export const CURRENT_CAP = 1000;

export type ScopeType = 'project' | 'application' | 'database' | 'objective';
export interface Scope {
  type: ScopeType;
  id: string;
  /** For `/projects/{projectID}/databases/{databaseID}`: the project the database must belong to. */
  projectId?: string | null;
}

export const notFoundActivity = (what = 'activity') => notFound('activity_not_found', `${what} not found`);

/** The scope as the response shows it. */
export const scopeView = (s: Scope) => ({ type: s.type, id: s.id, ...(s.projectId ? { project_id: s.projectId } : {}) });

/** A path id: a UUID, else 400 (spec 7.5 "malformed IDs"). */
export function checkId(id: string, name: string): string {
  if (!isUuid(id)) throw badRequest('invalid_id', `${name} is not a valid id`);
  return id;
}

/** An item id `<source_kind>:<UUID>`. */
export function checkItemId(id: string): { kind: string; uuid: string } {
  const m = /^([a-z][a-z0-9_]*):(.+)$/.exec(id);
  if (!m || !isUuid(m[2])) throw badRequest('invalid_id', 'activity id must be <source_kind>:<uuid>');
  return { kind: m[1], uuid: m[2] };
}

/** `limit` as the query string gave it (strings; absent → default). */
export function parseLimit(raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^[0-9]{1,3}$/.test(raw))
    throw badRequest('invalid_limit', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  const n = Number(raw);
  if (n < 1 || n > MAX_LIMIT) throw badRequest('invalid_limit', `limit must be an integer from 1 to ${MAX_LIMIT}`);
  return n;
}

/** The query's cursor, checked (400 `invalid_cursor` before anything is read); null for the first page. */
export function parseCursor(raw: unknown, binding: string): string | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || raw.length === 0) throw badRequest('invalid_cursor', 'cursor must not be empty');
  try {
    keysetAfter({ field: 'sortAt', binding }, raw);
  } catch (e) {
    if (e instanceof PlatformError) throw e;
    throw badRequest('invalid_cursor', 'cursor is malformed');
  }
  return raw;
}

export type Page<T> = KeysetPage<T>;

/** Rows newest first by `field`, then id: one page after the cursor (`core/keyset.ts`), and the `current` ones capped. */
function keysetPage<T extends { _id: string }>(
  model: Model<T>,
  field: keyof T & string,
  filter: FilterQuery<T>,
  limit: number,
  cursor: string | null,
  binding: string,
): Promise<Page<T>> {
  return findPage<T>(model, { ...filter, current: false }, { field, binding, limit, cursor });
}

async function capped<T extends { _id: string }>(model: Model<T>, field: keyof T & string, filter: FilterQuery<T>) {
  const rows = await model
    .find({ ...filter, current: true } as FilterQuery<T>)
    .sort({ [field]: -1, _id: -1 })
    .limit(CURRENT_CAP + 1)
    .lean<T[]>()
    .exec();
  return { items: rows.slice(0, CURRENT_CAP), complete: rows.length <= CURRENT_CAP };
}

export const itemPage = (
  models: ActivityModels,
  filter: FilterQuery<ActivityItemDoc>,
  limit: number,
  cursor: string | null,
  binding: string,
): Promise<Page<ActivityItemDoc>> => keysetPage(models.Item, 'sortAt', filter, limit, cursor, binding);

export const currentItems = (models: ActivityModels, filter: FilterQuery<ActivityItemDoc>) =>
  capped(models.Item, 'sortAt', filter);

export const actionPage = (
  models: ActivityModels,
  filter: FilterQuery<AgentActionDoc>,
  limit: number,
  cursor: string | null,
  binding: string,
): Promise<Page<AgentActionDoc>> => keysetPage(models.Action, 'createdAt', filter, limit, cursor, binding);

export const cappedActions = (models: ActivityModels, filter: FilterQuery<AgentActionDoc>) =>
  capped(models.Action, 'createdAt', filter);
