import type mongoose from 'mongoose';
import type { OperationDoc, OperationModel } from './model';
import { operationSchema } from './model';

/**
 * Terminal operations leave the hot `operations` collection for `operations_archive`.
 *
 * Why: the claim scan (due work, oldest first) and the outbox relay's scan read the hot collection
 * with filters no unique index answers, and on the MongoDB-wire server such a read is a full scan
 * under the collection's lock (decision 0001). Kept to live work plus the recently finished, their
 * cost stays flat however many operations the platform has ever run (decision 0015).
 *
 * A terminal operation never changes again: every holder write is fenced on a lease owner that
 * completion and failure clear, and the claim matches only `pending`/`running`. So a move is a copy
 * (an upsert by `_id`, safe to repeat) followed by a delete by `_id`, with no window in which a
 * write could be lost. A mover that dies between the two leaves a copy in both; the next pass
 * repeats the copy and deletes. Readers look in the hot collection first, then the archive.
 */

/** Collection of terminal operations moved out of the hot one. */
export const OPERATIONS_ARCHIVE_COLLECTION = 'operations_archive';

/** Pause between archive passes where an engine runs: 30 s. */
export const DEFAULT_ARCHIVE_INTERVAL_MS = 30_000;

/** Operations moved per pass (each is two single-document writes). */
export const ARCHIVE_BATCH = 200;

const ARCHIVE_MODEL_NAME = 'OperationArchive';

export function operationArchiveModel(conn: mongoose.Connection): OperationModel {
  return (
    (conn.models[ARCHIVE_MODEL_NAME] as OperationModel | undefined) ??
    conn.model<OperationDoc>(ARCHIVE_MODEL_NAME, operationSchema.clone(), OPERATIONS_ARCHIVE_COLLECTION)
  );
}

export class OperationArchive {
  constructor(
    private readonly hot: OperationModel,
    readonly archive: OperationModel,
  ) {}

  /**
   * Moves terminal operations finished before `cutoff` whose events are all published (an empty
   * outbox: the relay must see every event before its document leaves). Returns how many moved.
   */
  async moveFinishedBefore(cutoff: Date, limit = ARCHIVE_BATCH): Promise<number> {
    const done = await this.hot
      .find({ status: { $in: ['completed', 'failed'] }, finishedAt: { $lt: cutoff } })
      .limit(limit)
      .lean<OperationDoc[]>()
      .exec();
    let moved = 0;
    for (const op of done) {
      if (Array.isArray(op.outbox) && op.outbox.length > 0) continue; // the relay has not published it yet
      await this.archive.replaceOne({ _id: op._id }, op, { upsert: true }).exec();
      const res = await this.hot.deleteOne({ _id: op._id }).exec();
      moved += res.deletedCount;
    }
    return moved;
  }

  /** The archived operation `id`, or null. */
  get(id: string): Promise<OperationDoc | null> {
    return this.archive.findById(id).lean<OperationDoc>().exec();
  }

  /** The archived operations among `ids` (one `_id $in` read). */
  many(ids: string[]): Promise<OperationDoc[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.archive
      .find({ _id: { $in: ids } })
      .lean<OperationDoc[]>()
      .exec();
  }
}
