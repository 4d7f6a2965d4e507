import type { OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';

/** Finished operations remembered per process; beyond it the oldest is forgotten (read again on use). */
export const SETTLED_OPERATIONS_MAX = 10_000;

const TERMINAL = new Set(['completed', 'failed']);

/**
 * Reads of a site's lock holder that skip the database once the holder has finished.
 *
 * A site keeps naming its last lifecycle operation after it ends (a terminal holder is a free
 * lock, see site-locks.ts), so every metadata or history read used to fetch that operation again
 * — one MongoDB round trip per request for a document that can no longer change: the engine's
 * writes are fenced by a lease a terminal operation no longer has, and the outbox relay only pulls
 * delivered events (not shown). So a terminal operation read once is kept, per process and
 * bounded; one still queued or running is always read fresh. Safe with many processes: what is
 * kept is a fact every process would read the same.
 */
export class SettledOperations {
  private readonly settled = new Map<string, OperationDoc>();

  constructor(private readonly engine: OperationEngine) {}

  async get(id: string): Promise<OperationDoc | null> {
    const kept = this.settled.get(id);
    if (kept) return kept;
    const op = await this.engine.get(id);
    if (op && TERMINAL.has(op.status)) this.keep(op);
    return op;
  }

  /** Remembers `op` if it has finished (a tombstone written by getOrVoid is a failed one). */
  keep(op: OperationDoc): void {
    if (!TERMINAL.has(op.status)) return;
    if (this.settled.size >= SETTLED_OPERATIONS_MAX) this.settled.delete(this.settled.keys().next().value as string);
    this.settled.set(op._id, op);
  }
}
