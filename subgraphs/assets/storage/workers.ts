import type { BackgroundWorker } from '../../../core/area';
import type { Logger } from '../../../core/logger';
import type { AssetsService } from './service';
import type { AssetDoc } from '../records';

/**
 * Pause between idle rounds of the assets worker, in milliseconds. Writes in this process wake it
 * at once (`AssetsService.nudge`); the idle round (three collection scans on the wire server) only
 * picks up other processes' work and due retries, so once a second keeps an idle platform quiet.
 */
const IDLE_MS = 1_000;
/** How often staged files and stalled uploads are swept, in milliseconds. */
const SWEEP_EVERY_MS = 10_000;

/**
 * Removes what a process that died mid-upload left: staged files nobody writes to any more, and
 * records still `processing` past the same staleness (their blob may or may not have been
 * committed). A refused or abandoned upload thus leaves no record and no blob.
 */
export async function sweepAbandonedUploads(
  assets: AssetsService,
  now = new Date(),
): Promise<{ staged: number; records: number }> {
  const cutoff = new Date(now.getTime() - assets.settings.ASSETS_STAGING_STALE_MS);
  const staged = await assets.blobs.sweepStaged(cutoff);
  const stale = await assets.m.Asset.find({ status: 'processing', updatedAt: { $lt: cutoff } }, { outbox: 0 })
    .limit(100)
    .lean<AssetDoc[]>()
    .exec();
  let records = 0;
  for (const a of stale) {
    const res = await assets.m.Asset.deleteOne({ _id: a._id, status: 'processing' });
    if (res.deletedCount !== 1) continue;
    records++;
    await assets.uploads.release(
      a.accountId,
      a.versions.reduce((s, v) => s + v.size, 0),
    );
    for (const v of a.versions) await assets.uploads.dropBlobIfUnused(v.sha256, [a.homeRegion]);
  }
  return { staged, records };
}

/** Delete jobs, replication and the abandoned-upload sweep, in one loop where workers run. */
export function assetsWorker(assets: AssetsService, log: Logger): BackgroundWorker {
  let running = false;
  let timer: NodeJS.Timeout | undefined;
  let loop: Promise<void> | undefined;
  let lastSweep = 0;
  /** A nudge came during a round: run the next one at once. */
  let again = false;
  let unlisten: (() => void) | undefined;

  const round = async (): Promise<boolean> => {
    let busy = false;
    const job = await assets.claimJob();
    if (job) {
      busy = true;
      try {
        await assets.runDeleteJob(job);
      } catch (e) {
        // The lease lapses and another round retries it.
        log.warn({ err: (e as Error).message, job: job._id }, 'asset delete job failed; will retry');
      }
    }
    if ((await assets.replicateOnce()) > 0) busy = true;
    if (await assets.transforms.runEagerOnce()) busy = true;
    if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = Date.now();
      const swept = await sweepAbandonedUploads(assets);
      const expired = await assets.sessions.expireDue();
      if (swept.staged + swept.records + expired > 0) log.info({ ...swept, expiredSessions: expired }, 'swept abandoned uploads');
    }
    return busy;
  };

  const schedule = (ms: number) => {
    if (!running) return;
    timer = setTimeout(() => {
      loop = round()
        .catch((e) => {
          log.warn({ err: (e as Error).message }, 'assets worker round failed');
          return false;
        })
        .then((busy) => {
          timer = undefined;
          const now = busy || again;
          again = false;
          loop = undefined;
          schedule(now ? 0 : IDLE_MS);
        });
    }, ms);
  };

  const wake = () => {
    if (!running) return;
    if (loop) {
      again = true; // a round is under way: the next starts right after it
      return;
    }
    if (timer) clearTimeout(timer);
    schedule(0);
  };

  return {
    name: 'assets-worker',
    start() {
      running = true;
      unlisten = assets.onNudge(wake);
      schedule(0);
    },
    async stop() {
      running = false;
      unlisten?.();
      if (timer) clearTimeout(timer);
      await loop;
    },
  };
}
