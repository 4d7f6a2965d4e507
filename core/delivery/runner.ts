import { DueWorkLoop } from '../due-work-loop';
import type { Logger } from '../logger';
import { attemptOutcome, type DeliveryStatus, type RetrySchedule } from './engine';
import type { DeliveryAttempt } from './record';

/** Deliveries one round claims at the most, when the runner waits for each round's attempts. */
export const DRAIN_BATCH = 20;

/** A due delivery as a store lists it: its id and whatever its claim is made against. */
export interface DueRef {
  _id: string;
}

/** A delivery one runner holds: the record, the number of this attempt, and the fence its result is written under. */
export interface Claimed<D> {
  d: D;
  /** 1-based number of the attempt about to be made (what the retry schedule counts). */
  count: number;
  /** What the store's conditional writes for this claim match on (a lease's end, a fencing counter). */
  fence: unknown;
}

/** What one attempt led to, as the record of it was written. */
export interface RecordedAttempt {
  ok: boolean;
  status: DeliveryStatus;
  /** 1-based number of this attempt. */
  count: number;
  attempt: DeliveryAttempt;
  done: Date;
}

/**
 * Where an area keeps its deliveries: the few conditional writes the runner makes. Every write
 * after the claim matches the claim's fence, so of two runners that read the same delivery one
 * claims it, and a runner whose claim lapsed (another one took the delivery over) records nothing.
 */
export interface DeliveryStore<D, R extends DueRef = DueRef> {
  /** Up to `limit` deliveries due at `now`: due and unclaimed, or claimed under a claim that lapsed. */
  due(now: Date, limit: number): Promise<R[]>;
  /** Claims one of them against the state it was read in; null when another runner got there first. */
  claim(due: R, now: Date): Promise<Claimed<D> | null>;
  /**
   * Writes the attempt and its outcome (`nextAttemptAt` null once it ended) under the claim's
   * fence, with `alsoPush` in the same `$push`; false when the fence no longer holds.
   */
  record(
    claimed: Claimed<D>,
    recorded: RecordedAttempt,
    nextAttemptAt: Date | null,
    alsoPush: Record<string, unknown>,
  ): Promise<boolean>;
  /** Until the next delivery falls due (or a claim lapses), in ms; null when the poll should find it. */
  nextDueInMs(now: Date): Promise<number | null>;
  /** Sets a claimed delivery aside without an attempt (its endpoint is paused) until the area makes it due again. */
  park?(claimed: Claimed<D>): Promise<void>;
}

export interface DeliveryRunnerOptions<D, E, R extends DueRef = DueRef> {
  /** Names the loop in its log lines. */
  name: string;
  log: Logger;
  store: DeliveryStore<D, R>;
  schedule: RetrySchedule;
  /** The longest wait between rounds. */
  pollMs: number;
  /** The endpoint a delivery goes to, or null when it was deleted (the delivery then fails). */
  endpoint(d: D): Promise<E | null>;
  /** Signs and sends one attempt; a failure is an attempt with an error, never a throw. */
  send(endpoint: E, d: D): Promise<DeliveryAttempt>;
  /** A paused endpoint: its deliveries are parked (`store.park`) instead of attempted. */
  paused?(endpoint: E): boolean;
  /** The error recorded when the endpoint is gone: "the webhook was deleted" by default. */
  goneError?: string;
  /** Of the due deliveries, those to attempt now; it puts off the others itself (Assets: one asset's in order). */
  hold?(due: R[], now: Date): Promise<R[]>;
  /** More to `$push` with the attempt's record, in the same write (mail: the delivery's event into its outbox). */
  alsoPush?(d: D, recorded: RecordedAttempt): Record<string, unknown>;
  /** A delivery ended, succeeded or failed for good (Assets: the next one of its asset may go). */
  ended?(d: D): Promise<void>;
  /**
   * Attempts in flight at once, when set: a round claims only as many as there is room for and does
   * not wait for them, and the next round starts once half the room is free (the object store's
   * many slow receivers). Unset: a round claims up to `DRAIN_BATCH` and waits for their attempts.
   */
  concurrency?: number;
  /** The clock (tests run a retry schedule of hours on an injected one). */
  now?: () => number;
}

/**
 * The kernel's delivery engine over one area's store (docs/decisions/0230-one-delivery-engine.md,
 * 0301): on `DueWorkLoop` it reads due deliveries, claims each through the store, loads its
 * endpoint (gone: the delivery fails; paused: it is parked), calls the area's `send`, and records
 * the attempt with the next one scheduled by `attemptOutcome`.
 */
export class DeliveryRunner<D, E, R extends DueRef = DueRef> {
  private readonly loop: DueWorkLoop;
  private readonly inFlight = new Set<Promise<void>>();
  protected readonly now: () => number;

  constructor(protected readonly opts: DeliveryRunnerOptions<D, E, R>) {
    this.now = opts.now ?? Date.now;
    this.loop = new DueWorkLoop({
      name: opts.name,
      log: opts.log,
      pollMs: opts.pollMs,
      drain: () => this.drain(),
      nextDueInMs: () => opts.store.nextDueInMs(new Date(this.now())),
    });
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
    await Promise.allSettled([...this.inFlight]);
  }

  /** New work was written in this process: run a round now. */
  nudge(): void {
    this.loop.nudge();
  }

  /**
   * One round. Waiting for its attempts: true when it attempted any. With `concurrency`: true when
   * it filled the room (more may be due at once).
   */
  async drain(): Promise<boolean> {
    const limit = this.opts.concurrency ? this.opts.concurrency - this.inFlight.size : DRAIN_BATCH;
    if (limit <= 0) return false;
    const now = new Date(this.now());
    const due = await this.opts.store.due(now, limit);
    const ready = this.opts.hold ? await this.opts.hold(due, now) : due;
    if (!this.opts.concurrency) {
      await Promise.all(ready.map((r) => this.attempt(r)));
      return ready.length > 0;
    }
    for (const r of ready) {
      const claimed = await this.opts.store.claim(r, now);
      if (claimed) this.track(this.attemptClaimed(claimed));
    }
    return due.length === limit;
  }

  /** Runs rounds until nothing is due and nothing is in flight (tests and benchmarks). */
  async settle(): Promise<void> {
    for (;;) {
      const more = await this.drain();
      if (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
      else if (!more) return;
    }
  }

  /** One attempt of one due delivery: claim, send, record, schedule the next. */
  async attempt(due: R): Promise<void> {
    const claimed = await this.opts.store.claim(due, new Date(this.now()));
    if (claimed) await this.attemptClaimed(claimed);
  }

  private track(p: Promise<void>): void {
    const tracked: Promise<void> = p
      .catch((e) => this.opts.log.warn({ loop: this.opts.name, err: String(e) }, 'delivery attempt failed unexpectedly'))
      .finally(() => {
        this.inFlight.delete(tracked);
        // Rescan once half the room is free, not after every attempt: each scan reads the collection.
        if (this.inFlight.size <= this.opts.concurrency! / 2) this.nudge();
      });
    this.inFlight.add(tracked);
  }

  private async attemptClaimed(claimed: Claimed<D>): Promise<void> {
    const { d, count } = claimed;
    const endpoint = await this.opts.endpoint(d);
    if (endpoint !== null && this.opts.paused?.(endpoint)) {
      if (!this.opts.store.park) throw new Error(`${this.opts.name}: a paused endpoint needs a store that parks`);
      await this.opts.store.park(claimed);
      return;
    }
    const attempt: DeliveryAttempt =
      endpoint !== null
        ? await this.opts.send(endpoint, d)
        : {
            statusCode: null,
            durationMs: 0,
            at: new Date(this.now()),
            responseExcerpt: null,
            error: this.opts.goneError ?? 'the webhook was deleted',
          };
    const done = new Date(this.now());
    const { ok, status, nextAttemptAt } = attemptOutcome(attempt.statusCode, count, this.opts.schedule, endpoint === null, done);
    const recorded: RecordedAttempt = { ok, status, count, attempt, done };
    const written = await this.opts.store.record(claimed, recorded, nextAttemptAt, this.opts.alsoPush?.(d, recorded) ?? {});
    if (written && status !== 'pending') await this.opts.ended?.(d);
  }
}
