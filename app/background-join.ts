import type { Logger } from '../core/logger';

/**
 * Starts pieces that may need Kafka (area consumers, workers that create their topics) without
 * letting an unreachable broker keep the platform from serving: each task is retried with backoff
 * (1 s doubling to 30 s) until it succeeds or `stop` is called. `wait` resolves when every task has
 * succeeded, or after `waitMs` with the rest still retrying in the background — so with Kafka up,
 * the platform starts exactly as before (everything joined), and with Kafka down it starts after
 * `waitMs` and joins when the broker answers. Events meanwhile wait in the outbox. Any failed start
 * is retried this way, and each failure is logged with the task's name.
 */
export class BackgroundJoin {
  private stopped = false;
  private readonly running: Promise<void>[] = [];
  /** How to undo each task that succeeded (run by `stop`, newest first). */
  private readonly undo: (() => Promise<void>)[] = [];

  constructor(
    private readonly log: Logger,
    private readonly retryMs = 1_000,
  ) {}

  /** Runs `task` until it succeeds; what it returns undoes it at `stop` (also when it succeeds late). */
  add(name: string, task: () => Promise<() => Promise<void>>): void {
    this.running.push(
      (async () => {
        let delay = this.retryMs;
        while (!this.stopped) {
          try {
            const undo = await task();
            // Succeeded after stop began: undo at once rather than leak a consumer or a worker.
            if (this.stopped) await undo();
            else this.undo.push(undo);
            return;
          } catch (err) {
            if (this.stopped) return;
            this.log.warn({ task: name, err: (err as Error).message, retryInMs: delay }, 'background start failed; retrying');
            await new Promise((r) => setTimeout(r, delay).unref());
            delay = Math.min(delay * 2, 30_000);
          }
        }
      })(),
    );
  }

  /** Resolves when all tasks succeeded, or after `waitMs`, whichever comes first. */
  wait(waitMs: number): Promise<void> {
    return Promise.race([
      Promise.all(this.running).then(() => undefined),
      new Promise<void>((r) => setTimeout(r, waitMs).unref()),
    ]);
  }

  /** Ends the retries and undoes every task that succeeded, newest first. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const undo of this.undo.splice(0).reverse()) await undo();
  }
}
