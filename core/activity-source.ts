/**
 * How an area's events reach the activity feeds: an area declares a source (a topic and a mapper)
 * in its definition; the activity area consumes every declared source into its read models.
 * The activity area owns the meaning of these fields (spec 2.6, 3.5); this is only the seam.
 */
export type ActivityStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'cancelled' | 'rolled_back' | 'unknown';

export interface ActivityRecord {
  /** `<source_kind>:<source UUID>` */
  id: string;
  sourceKind: string;
  sourceId: string;
  accountId: string;
  /** The resource the activity is about, e.g. {type: 'project', id}. */
  resource: { type: string; id: string };
  /** The project it belongs to, when any. */
  projectId: string | null;
  title: string;
  type: string;
  status: ActivityStatus;
  /** The source's own status word. */
  sourceStatus: string;
  step: string | null;
  /** Terminal evidence: null when unknown, never read as success. */
  terminal: { outcome: string; at: string } | null;
  initiator: unknown;
  createdAt: string | null;
  startedAt: string | null;
  updatedAt: string | null;
  finishedAt: string | null;
  /** Monotonic per source record (e.g. an event's sequence); a lower one never overwrites a higher. */
  version: number;
  extra?: Record<string, unknown>;
}

export interface ActivitySource<E = unknown> {
  /** e.g. `publisher_operation`; also the prefix of item ids. */
  sourceKind: string;
  /** Topic name after the prefix, e.g. `operations`. */
  topic: string;
  /** One event → the record as it now stands, or null when the event is not activity. */
  map(event: E): ActivityRecord | null;
}
