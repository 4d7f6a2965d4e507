import type { ActivityRecord, ActivitySource } from '../../core/activity-source';
import { isDuplicateKey, insertOne } from '../../core/mongo';
import { STEP_COMPLETED, STEP_QUEUED } from '../../core/operations/model';
import type { ActivityItemDoc, ActivityModels, TaskDoc } from './model';

/** Step words that mark a lifecycle point, not a task (the engine's queued and completed markers). */
const NOT_TASKS = new Set([STEP_QUEUED, STEP_COMPLETED]);

/**
 * The item's tasks after `r`: each step the source reported as current, with the first and last
 * time it was. Order-insensitive (min/max per name, sorted by first time), so a replay of the same
 * events gives the same list.
 */
export function mergedTasks(prev: TaskDoc[] | undefined, r: ActivityRecord): TaskDoc[] {
  const tasks = [...(prev ?? [])];
  const at = r.updatedAt;
  if (r.step && at && !NOT_TASKS.has(r.step)) {
    const i = tasks.findIndex((t) => t.name === r.step);
    if (i < 0) tasks.push({ name: r.step, firstAt: at, lastAt: at });
    else
      tasks[i] = {
        name: r.step,
        firstAt: tasks[i].firstAt < at ? tasks[i].firstAt : at,
        lastAt: tasks[i].lastAt > at ? tasks[i].lastAt : at,
      };
  }
  return tasks.sort((a, b) => (a.firstAt === b.firstAt ? a.name.localeCompare(b.name) : a.firstAt < b.firstAt ? -1 : 1));
}

/** Normalised statuses that leave `current` for `history` (spec 3.5; `unknown` stays current). */
const TERMINAL_STATUSES = new Set(['completed', 'failed', 'cancelled', 'rolled_back']);

const date = (s: string | null | undefined): Date | null => (s ? new Date(s) : null);

/**
 * The document an item becomes after `r`, given what it was. Pure, so replaying a source's events
 * in order rebuilds the same document: the record's fields win, except the times a later event no
 * longer carries (creation, first start), which keep their first value.
 */
export function merged(prev: ActivityItemDoc | null, r: ActivityRecord): ActivityItemDoc {
  const createdAt = prev?.createdAt ?? date(r.createdAt);
  return {
    _id: r.id,
    sourceKind: r.sourceKind,
    sourceId: r.sourceId,
    accountId: r.accountId,
    projectId: r.projectId,
    resourceType: r.resource.type,
    resourceId: r.resource.id,
    resourceKey: `${r.resource.type}:${r.resource.id}`,
    title: r.title,
    type: r.type,
    status: r.status,
    sourceStatus: r.sourceStatus,
    step: r.step,
    terminal: r.terminal,
    initiator: r.initiator ?? prev?.initiator ?? null,
    createdAt,
    startedAt: prev?.startedAt ?? date(r.startedAt),
    updatedAt: date(r.updatedAt),
    finishedAt: date(r.finishedAt),
    sortAt: createdAt ?? prev?.sortAt ?? date(r.updatedAt) ?? new Date(r.version),
    current: !TERMINAL_STATUSES.has(r.status),
    version: r.version,
    extra: { ...(prev?.extra ?? {}), ...(r.extra ?? {}) },
    tasks: mergedTasks(prev?.tasks, r),
  };
}

export type Applied = { doc: ActivityItemDoc; changed: boolean };

/**
 * Applies one record: an insert, or a conditional replace of the version it was read at, retried
 * when another writer moved it. A record older than the stored one changes nothing (at-least-once
 * delivery and replays are safe); an equal one is re-applied (same event, same document).
 */
export async function applyRecord(
  models: ActivityModels,
  record: ActivityRecord,
  enrich?: (r: ActivityRecord) => Promise<ActivityRecord>,
): Promise<Applied> {
  let r = record;
  for (let attempt = 0; attempt < 20; attempt++) {
    const prev = await models.Item.findById(r.id).lean<ActivityItemDoc>().exec();
    if (prev && prev.version > r.version) return { doc: prev, changed: false };
    // Only the first projection of an item may need enriching: from then on the item holds it.
    if (enrich && !prev) r = await enrich(r);
    const doc = merged(prev, r);
    if (!prev) {
      try {
        await insertOne(models.Item, doc);
        return { doc, changed: true };
      } catch (e) {
        if (isDuplicateKey(e)) continue;
        throw e;
      }
    }
    const { _id, ...fields } = doc;
    const res = await models.Item.updateOne({ _id, version: prev.version }, { $set: fields }).exec();
    // A re-applied record counts as a change too: its update is sent again (same event id), so a
    // delivery retried after a failed publish still reaches the feeds.
    if (res.matchedCount === 1) return { doc, changed: true };
  }
  throw new Error(`activity item ${r.id} kept changing under the projection`);
}

/** Maps and applies one event of `source`; null when the event is not activity. */
export async function project(
  models: ActivityModels,
  source: ActivitySource,
  event: unknown,
  enrich?: (r: ActivityRecord) => Promise<ActivityRecord>,
): Promise<Applied | null> {
  const record = source.map(event);
  if (!record) return null;
  if (!record.id.startsWith(`${source.sourceKind}:`))
    throw new Error(`source ${source.sourceKind} mapped an item id ${record.id}`);
  return applyRecord(models, record, enrich);
}
