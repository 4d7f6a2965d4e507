import type { ActivityRecord, ActivitySource, ActivityStatus } from '../activity-source';
import { TOPICS } from '../events/topics';
import type { OperationEvent } from './store';
import { STEP_QUEUED } from './model';

/**
 * The kernel's activity source: every area's durable operations (the engine publishes them all on
 * `${prefix}.operations`), so an area with operations shows in the activity feeds with no extra
 * work. The activity area consumes it beside the sources areas declare.
 */
export const OPERATION_SOURCE_KIND = 'operation';

/** Terminal outcomes as the feeds report them (spec 2.6 "terminal evidence"). */
const TERMINAL: Partial<Record<OperationEvent['status'], string>> = { completed: 'succeeded', failed: 'failed' };

/**
 * Orders the events of one operation that share a millisecond: the engine writes them in this order
 * (enqueue → claim → steps → end), and Kafka keeps one project's events in order.
 */
const STATUS_RANK: Record<string, number> = { pending: 1, running: 2, completed: 3, failed: 3 };

/** The engine's status word → the normalised activity status (spec 3.5). */
export function normaliseOperationStatus(e: Pick<OperationEvent, 'status' | 'step' | 'errorCode'>): ActivityStatus {
  switch (e.status) {
    case 'pending':
      // A pending operation that already failed once waits for its retry; one never started is queued.
      return e.errorCode ? 'waiting' : 'queued';
    case 'running':
      return 'running';
    case 'completed':
      return 'completed';
    case 'failed':
      return 'failed';
    default:
      return 'unknown';
  }
}

const words = (s: string) => s.replace(/[_.]+/g, ' ').trim();
const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function mapOperationEvent(e: OperationEvent): ActivityRecord | null {
  if (!e || typeof e.id !== 'string' || typeof e.accountId !== 'string' || typeof e.operationType !== 'string') return null;
  const at = Date.parse(e.updatedAt);
  if (Number.isNaN(at)) return null;
  const status = normaliseOperationStatus(e);
  const outcome = TERMINAL[e.status];
  // The event of an enqueue is the only one whose time is the creation time.
  const isFirst = e.status === 'pending' && e.step === STEP_QUEUED && !e.errorCode;
  return {
    id: `${OPERATION_SOURCE_KIND}:${e.id}`,
    sourceKind: OPERATION_SOURCE_KIND,
    sourceId: e.id,
    accountId: e.accountId,
    resource: { type: e.resourceType, id: e.resourceId },
    projectId: e.projectId ?? null,
    title: capitalised(`${words(e.operationType)} ${words(e.resourceType)}`),
    type: e.operationType,
    status,
    sourceStatus: e.status,
    step: e.step ?? null,
    terminal: outcome ? { outcome, at: e.updatedAt } : null,
    initiator: e.initiator ?? null,
    createdAt: isFirst ? e.updatedAt : null,
    startedAt: e.status === 'running' ? e.updatedAt : null,
    updatedAt: e.updatedAt,
    finishedAt: outcome ? e.updatedAt : null,
    version: at * 10 + (STATUS_RANK[e.status] ?? 0),
    extra: { errorCode: e.errorCode ?? null, executor: 'operation_engine' },
  };
}

/** Declared by the composition root beside the areas' own sources. */
export const operationActivitySource: ActivitySource<OperationEvent> = {
  sourceKind: OPERATION_SOURCE_KIND,
  topic: TOPICS.operations,
  map: mapOperationEvent,
};
