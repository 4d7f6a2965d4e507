import type { Logger } from './logger';

export interface DueWorkLoopOptions {
  /** Names the loop in its log lines. */
  name: string;
  log: Logger;
  /** The longest wait between rounds, and the wait after a failed one. */
  pollMs: number;
  /** Claims and does the work that is due; true when it did some (the loop goes again at once). */
  drain: () => Promise<boolean>;
  /** Milliseconds until the next piece of work falls due, or null when none is waiting. */
  nextDueInMs: () => Promise<number | null>;
}

/**
 * A worker loop over durable, due-dated work (messages to send, deliveries to attempt): drains
 * what is due, then sleeps until the next item falls due (at most `pollMs`); `nudge` wakes it when
 * new work is written in this process. Rounds never overlap. Any failure — the database gone
 * mid-round, or while asking what is next — is logged and retried after `pollMs`; it never
 * escapes as an unhandled rejection, and the loop never stops by itself.
 */
export class DueWorkLoop {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private round: Promise<void> | null = null;
  private again = false;

  constructor(private readonly opts: DueWorkLoopOptions) {}

  start(): void {
    this.running = true;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.round;
  }

  /** New work was written: run a round now (or right after the one in progress). */
  nudge(): void {
    if (!this.running) return;
    if (this.round) this.again = true;
    else this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.running || this.round) return;
      this.round = this.runRound().finally(() => {
        this.round = null;
      });
    }, ms);
  }

  private async runRound(): Promise<void> {
    let next = this.opts.pollMs;
    try {
      while (this.running && (await this.opts.drain()));
      if (!this.running) return;
      const due = await this.opts.nextDueInMs();
      next = due === null ? this.opts.pollMs : Math.max(0, Math.min(this.opts.pollMs, due));
    } catch (e) {
      this.opts.log.warn({ loop: this.opts.name, err: (e as Error).message }, 'work loop round failed; retrying');
    }
    if (!this.running) return;
    const again = this.again;
    this.again = false;
    // `round` is still set while this schedules; the timer's own check runs after it clears.
    this.schedule(again ? 0 : next);
  }
}
