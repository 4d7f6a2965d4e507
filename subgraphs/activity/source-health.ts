import type { ActivityModels, SourceHealthDoc } from './model';

/**
 * Per-source health of the projections (`availability.sources[].health`): when each source's last
 * event was applied, how far behind the source that ran, and its last error. The consumer reports
 * here; reads show it. Written to the database so every process reads the same figures.
 */

/** A healthy source's figures are written at most this often per process: 1 s. */
export const HEALTH_WRITE_INTERVAL_MS = 1000;
/** A projection further behind its source than this is `lagging`: 30 s. */
export const LAGGING_AFTER_MS = 30_000;
/**
 * What kind of failure it was, never its message: health is shown to every account, and a message
 * may name another account's records or the database's address.
 */
export function errorCode(e: unknown): string {
  const name = e instanceof Error ? e.name : '';
  const message = e instanceof Error ? e.message : '';
  if (/kept changing/.test(message)) return 'projection_contention';
  if (/mapped an item id/.test(message)) return 'invalid_event';
  if (/^Mongo/.test(name)) return 'database_error';
  return 'projection_error';
}

export type HealthStatus = 'ok' | 'lagging' | 'failing' | 'idle';

export interface SourceHealthView {
  status: HealthStatus;
  last_event_at: string | null;
  last_applied_at: string | null;
  lag_ms: number | null;
  last_error: { code: string; at: string } | null;
}

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

export function healthView(doc: SourceHealthDoc | null | undefined): SourceHealthView {
  if (!doc) return { status: 'idle', last_event_at: null, last_applied_at: null, lag_ms: null, last_error: null };
  const failing = !!doc.lastErrorAt && (!doc.lastAppliedAt || doc.lastErrorAt > doc.lastAppliedAt);
  const status: HealthStatus = failing
    ? 'failing'
    : !doc.lastAppliedAt
      ? 'idle'
      : (doc.lagMs ?? 0) > LAGGING_AFTER_MS
        ? 'lagging'
        : 'ok';
  return {
    status,
    last_event_at: iso(doc.lastEventAt),
    last_applied_at: iso(doc.lastAppliedAt),
    lag_ms: doc.lagMs,
    last_error: doc.lastError && doc.lastErrorAt ? { code: doc.lastError, at: iso(doc.lastErrorAt)! } : null,
  };
}

export class SourceHealth {
  /** Per source: when this process last wrote, and whether its last write was an error. */
  private readonly written = new Map<string, { at: number; failed: boolean }>();

  constructor(private readonly models: ActivityModels) {}

  /** One event of `kind` applied; `eventAt` is the source's own time of it. */
  async applied(kind: string, eventAt: Date | null, now = new Date()): Promise<void> {
    const last = this.written.get(kind);
    if (last && !last.failed && now.getTime() - last.at < HEALTH_WRITE_INTERVAL_MS) return;
    this.written.set(kind, { at: now.getTime(), failed: false });
    const lagMs = eventAt ? Math.max(0, now.getTime() - new Date(eventAt).getTime()) : null;
    await this.models.Health.updateOne(
      { _id: kind },
      { $set: { lastEventAt: eventAt, lastAppliedAt: now, lagMs } },
      { upsert: true },
    )
      .exec()
      .catch(() => undefined); // health is best effort: never fails the projection
  }

  /** An event of `kind` could not be applied (the consumer retries it). */
  async failed(kind: string, e: unknown, now = new Date()): Promise<void> {
    this.written.set(kind, { at: now.getTime(), failed: true });
    await this.models.Health.updateOne({ _id: kind }, { $set: { lastErrorAt: now, lastError: errorCode(e) } }, { upsert: true })
      .exec()
      .catch(() => undefined);
  }

  async read(kinds: string[]): Promise<Map<string, SourceHealthView>> {
    const docs = await this.models.Health.find({ _id: { $in: kinds } })
      .lean<SourceHealthDoc[]>()
      .exec();
    const byKind = new Map(docs.map((d) => [d._id, d]));
    return new Map(kinds.map((k) => [k, healthView(byKind.get(k))]));
  }
}
