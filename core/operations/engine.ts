import { hostname } from 'node:os';
import { operationRuns, operationsEnqueued } from '../telemetry/metrics';
import { contextFromTraceparent, currentTraceparent, detached, inSpan } from '../telemetry/tracing';
import type mongoose from 'mongoose';
import { config } from '../config';
import { PlatformError, conflict, isPlatformError } from '../errors';
import type { EventBus } from '../events/event-bus';
import { OutboxRelay } from '../events/outbox';
import { TOPICS, topicName } from '../events/topics';
import { newId } from '../ids';
import { isDuplicateKey, insertOne } from '../mongo';
import { childLogger, type Logger } from '../logger';
import {
  DEFAULT_MAX_ATTEMPTS,
  STEP_QUEUED,
  operationModel,
  type OperationDoc,
  type OperationModel,
  type OperationStep,
} from './model';
import { periodicWorker, type BackgroundWorker } from '../periodic-worker';
import { DEFAULT_ARCHIVE_INTERVAL_MS, OperationArchive, operationArchiveModel } from './archive';
import { redactMessage } from './redact';
import { OperationStore, type Candidate, type Fence } from './store';

/** Thrown inside `enqueue` to take the duplicate-id path for an id found in the archive. */
/** A running step's progress line is written at most this often: 1 s. */
const PROGRESS_INTERVAL_MS = 1000;
const DUPLICATE_IN_ARCHIVE = new Error('operation id already archived');

/** The holder's lease was taken over (or it could not renew it): its work is void. */
export class LeaseLostError extends PlatformError {
  constructor(operationId: string) {
    super('lease_lost', 409, `lease on operation ${operationId} was lost`, { operationId });
    this.name = 'LeaseLostError';
  }
}

/** The worker is stopping; the operation is handed back and resumes elsewhere. */
export class WorkerShutdownError extends PlatformError {
  constructor() {
    super('worker_shutdown', 503, 'worker is shutting down', {}, true);
    this.name = 'WorkerShutdownError';
  }
}

/** A step overran its deadline: retriable (the next attempt runs it again with the same token). */
export class StepTimeoutError extends PlatformError {
  constructor(step: string, ms: number) {
    super('step_timeout', 504, `step ${step} did not finish within ${ms} ms`, { step }, true);
    this.name = 'StepTimeoutError';
  }
}

/** The operation overran its overall deadline: final. */
export class OperationDeadlineError extends PlatformError {
  constructor(operationId: string) {
    super('operation_deadline_exceeded', 504, `operation ${operationId} did not finish before its deadline`, {});
    this.name = 'OperationDeadlineError';
  }
}

/** What one step's work is given. */
export interface StepContext {
  /**
   * `<operation id>:<step id>`: pass it to infrastructure calls as their idempotency token, so a
   * step run again after a crash or a timeout is recognised, not performed twice.
   */
  readonly idempotencyToken: string;
  /** Aborted at the step's deadline, when the lease is lost, or at the operation's deadline. */
  readonly signal: AbortSignal;
  /**
   * Records what the running step is doing now (one short line, e.g. an install's progress) as the
   * step's `detail`; never a secret. Writes are fenced like every other and at most one per second.
   */
  progress(detail: string): Promise<void>;
}

export interface OperationContext {
  /** The operation as claimed (input, attempt, steps recorded by earlier attempts). */
  readonly op: OperationDoc;
  /**
   * Runs one named step once: records it running (the operation's `step`, with an event), runs
   * `fn`, records it completed with its result. A step completed by an earlier attempt is not run
   * again; its recorded result is returned. Results are stored: keep them small and JSON-like.
   * The step is abandoned at its deadline (`timeoutMs`, default OPERATION_STEP_TIMEOUT_MS) with a
   * retriable `step_timeout`, even when `fn` ignores its signal.
   */
  step<T>(id: string, fn: (s: StepContext) => Promise<T>, opts?: { timeoutMs?: number }): Promise<T>;
  /** Renews the lease now (the engine also does so every lease/3); throws LeaseLostError if lost. */
  heartbeat(): Promise<void>;
  /** Aborted when the lease is lost, the worker shuts down or the operation's deadline passes. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** `<operation id>:<lease token>`: what this attempt stamps on the resource it changes (./fencing.ts). */
  readonly fence: string;
}

export type OperationExecutor = (ctx: OperationContext) => Promise<unknown>;

export interface EnqueueInput {
  accountId: string;
  projectId: string;
  resourceType: string;
  resourceId: string;
  operationType: string;
  input?: unknown;
  initiator?: unknown;
  maxAttempts?: number;
  /** Chosen by the caller (e.g. to reference it first from its own document); enqueue is then idempotent. */
  id?: string;
  /**
   * `id` was drawn at random for this call (not read back from a stored plan or sent by a client),
   * so no earlier operation can hold it: the archive lookup that keeps a reused id from running
   * twice is skipped (one round trip fewer on every such create).
   */
  idIsNew?: boolean;
  /** Overall deadline from now, in milliseconds: the engine's `deadlineMs`. */
  deadlineMs?: number;
}

export interface OperationEngineOptions {
  conn: mongoose.Connection;
  /** Publishes the outbox through a relay the engine owns (started and stopped with it). */
  bus?: EventBus;
  /** A relay owned by the caller; the engine only nudges it after its writes. */
  relay?: OutboxRelay;
  /** Idle scan interval of the relay the engine owns (writes nudge it at once): 100 ms. */
  relayIntervalMs?: number;
  workerId?: string;
  /** Lease of a claim: config().OPERATION_LEASE_MS (15 s). */
  leaseMs?: number;
  /** Pause between scans for due work: 250 ms. */
  pollMs?: number;
  /** Operations run at once by this engine: 8. */
  concurrency?: number;
  /** First retry pause, doubled per attempt: 500 ms. */
  retryBaseMs?: number;
  /** Longest retry pause: 60 s. */
  maxRetryDelayMs?: number;
  /** Topic of operation events: topicName('operations'). */
  topic?: string;
  /** Default step deadline: config().OPERATION_STEP_TIMEOUT_MS (5 min). */
  stepTimeoutMs?: number;
  /** Default overall deadline of an operation from its enqueue: config().OPERATION_DEADLINE_MS (1 h). */
  deadlineMs?: number;
  /** A terminal operation moves to the archive this long after it finished: config().OPERATION_ARCHIVE_AFTER_MS (10 min). */
  archiveAfterMs?: number;
  /** Pause between archive passes: 30 s. */
  archiveIntervalMs?: number;
}

export interface EngineStats {
  claimed: number;
  completed: number;
  retried: number;
  failed: number;
  released: number;
  /** Runs that ended because another worker took over the lease. */
  leaseLost: number;
  /** Writes refused because the lease token had moved on. */
  fencedWrites: number;
}

/** Claims beyond maxAttempts granted to crashed runs (lease expired while running) before giving up. */
export const RESUME_ALLOWANCE = 3;

interface Run {
  fence: Fence;
  /** Status and step as last written by this run. */
  current: { status: OperationDoc['status']; step: string };
  controller: AbortController;
  heartbeat: NodeJS.Timeout | undefined;
  deadline: NodeJS.Timeout | undefined;
  done: Promise<void>;
}

/** The resource and operation type of a tombstone `getOrVoid` writes (an operation that never will be). */
export const VOID_OPERATION = 'void';

export class OperationEngine {
  readonly model: OperationModel;
  readonly store: OperationStore;
  /** Terminal operations, moved out of `model` (archive.ts); `get` and `getMany` read both. */
  readonly archive: OperationArchive;
  readonly workerId: string;
  readonly stats: EngineStats = {
    claimed: 0,
    completed: 0,
    retried: 0,
    failed: 0,
    released: 0,
    leaseLost: 0,
    fencedWrites: 0,
  };
  private readonly executors = new Map<string, OperationExecutor>();
  private readonly relay: OutboxRelay | undefined;
  private readonly ownsRelay: boolean;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly retryBaseMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly stepTimeoutMs: number;
  private readonly deadlineMs: number;
  private readonly log: Logger;
  private readonly runs = new Map<string, Run>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private running = false;
  private halted = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private scanAgain = false;
  private readonly archiveAfterMs: number;
  private readonly archiver: BackgroundWorker;

  constructor(opts: OperationEngineOptions) {
    this.model = operationModel(opts.conn);
    this.store = new OperationStore(this.model, opts.topic ?? topicName(TOPICS.operations));
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${newId().slice(0, 8)}`;
    this.leaseMs = opts.leaseMs ?? config().OPERATION_LEASE_MS;
    this.pollMs = opts.pollMs ?? 250;
    this.concurrency = Math.max(1, opts.concurrency ?? 8);
    this.retryBaseMs = opts.retryBaseMs ?? 500;
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 60_000;
    this.stepTimeoutMs = opts.stepTimeoutMs ?? config().OPERATION_STEP_TIMEOUT_MS;
    this.deadlineMs = opts.deadlineMs ?? config().OPERATION_DEADLINE_MS;
    this.ownsRelay = !opts.relay && Boolean(opts.bus);
    this.relay =
      opts.relay ??
      (opts.bus ? new OutboxRelay({ models: [this.model], bus: opts.bus, intervalMs: opts.relayIntervalMs }) : undefined);
    this.log = childLogger('operations', { worker: this.workerId });
    this.archive = new OperationArchive(this.model, operationArchiveModel(opts.conn));
    this.archiveAfterMs = opts.archiveAfterMs ?? config().OPERATION_ARCHIVE_AFTER_MS;
    this.archiver = periodicWorker('operations-archive', opts.archiveIntervalMs ?? DEFAULT_ARCHIVE_INTERVAL_MS, this.log, () =>
      this.archiveFinished(),
    );
  }

  /** One archive pass: moves what finished more than `archiveAfterMs` ago (archive.ts). */
  async archiveFinished(now: Date = new Date()): Promise<number> {
    const moved = await this.archive.moveFinishedBefore(new Date(now.getTime() - this.archiveAfterMs));
    if (moved > 0) this.log.debug({ moved }, 'terminal operations archived');
    return moved;
  }

  register(operationType: string, executor: OperationExecutor): void {
    this.executors.set(operationType, executor);
  }

  async enqueue(op: EnqueueInput): Promise<OperationDoc> {
    const now = new Date();
    const maxAttempts = op.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new Error('maxAttempts must be a positive integer');
    const doc = this.store.newDocument({
      _id: op.id ?? newId(),
      accountId: op.accountId,
      projectId: op.projectId,
      resourceType: op.resourceType,
      resourceId: op.resourceId,
      operationType: op.operationType,
      status: 'pending',
      step: STEP_QUEUED,
      steps: [],
      input: op.input ?? null,
      result: null,
      errorCode: null,
      errorMessage: null,
      attempt: 0,
      maxAttempts,
      runAfter: now,
      lease: { owner: null, token: 0, until: null },
      heartbeatAt: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
      deadlineAt: new Date(now.getTime() + (op.deadlineMs ?? this.deadlineMs)),
      initiator: op.initiator ?? null,
      traceparent: currentTraceparent() ?? null,
    });
    try {
      // An id whose operation finished and moved to the archive is taken too: the hot collection's
      // unique `_id` no longer sees it.
      if (op.id && !op.idIsNew && (await this.archive.get(op.id))) throw DUPLICATE_IN_ARCHIVE;
      await insertOne(this.model, doc);
    } catch (e) {
      if ((e !== DUPLICATE_IN_ARCHIVE && !isDuplicateKey(e)) || !op.id) throw e;
      const existing = await this.get(op.id);
      const same =
        existing &&
        existing.operationType === op.operationType &&
        existing.resourceType === op.resourceType &&
        existing.resourceId === op.resourceId &&
        existing.projectId === op.projectId;
      if (!same) throw conflict('operation_id_conflict', 'an operation with this id already exists');
      return existing;
    }
    operationsEnqueued.inc({ type: op.operationType });
    this.relay?.nudge();
    this.nudge();
    return doc;
  }

  /**
   * The operation `id`, or, when none exists, a terminal tombstone written under that id so that it
   * never will: an `enqueue` with the id afterwards fails (409 `operation_id_conflict`). One unique
   * insert decides between the two, with no clock: this is how a lock naming an operation that was
   * never enqueued (its request died in between) is freed. A tombstone is `failed`
   * (`operation_never_enqueued`), of resource type `void`, and publishes no event.
   */
  async getOrVoid(id: string, ref: Pick<EnqueueInput, 'accountId' | 'projectId' | 'resourceId'>): Promise<OperationDoc> {
    const existing = await this.get(id);
    if (existing) return existing;
    const now = new Date();
    const tombstone: OperationDoc = {
      _id: id,
      accountId: ref.accountId,
      projectId: ref.projectId,
      resourceType: VOID_OPERATION,
      resourceId: ref.resourceId,
      operationType: VOID_OPERATION,
      status: 'failed',
      step: STEP_QUEUED,
      steps: [],
      input: null,
      result: null,
      errorCode: 'operation_never_enqueued',
      errorMessage: 'the request that took this lock ended before its operation was enqueued',
      attempt: 0,
      maxAttempts: 0,
      runAfter: now,
      lease: { owner: null, token: 0, until: null },
      heartbeatAt: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: now,
      deadlineAt: null,
      initiator: null,
      outbox: [],
    };
    try {
      await this.model.create(tombstone);
      return tombstone;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      return (await this.get(id))!;
    }
  }

  /** The operation `id`, live or archived. */
  async get(id: string): Promise<OperationDoc | null> {
    return (await this.model.findById(id).lean<OperationDoc>().exec()) ?? this.archive.get(id);
  }

  /** The operations among `ids`, live or archived, in no particular order. */
  async getMany(ids: string[]): Promise<OperationDoc[]> {
    const hot = await this.model
      .find({ _id: { $in: ids } })
      .lean<OperationDoc[]>()
      .exec();
    const found = new Set(hot.map((o) => o._id));
    const rest = ids.filter((id) => !found.has(id));
    return rest.length === 0 ? hot : [...hot, ...(await this.archive.many(rest))];
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.halted = false;
    if (this.ownsRelay) this.relay?.start();
    this.archiver.start();
    this.schedule(0);
  }

  /** Looks for due work now (after an enqueue in this process). */
  nudge(): void {
    if (!this.running) return;
    if (this.scanning) this.scanAgain = true;
    else this.schedule(0);
  }

  /**
   * Stops claiming and lets running operations finish for up to `graceMs`; then aborts them and
   * hands them back (released leases resume elsewhere at once). An executor that ignores its
   * signal is abandoned: its lease expires.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.running = false;
    this.clearPoll();
    await this.scanning;
    await this.archiver.stop();
    if (!this.halted) {
      const inFlight = () => Promise.all([...this.runs.values()].map((r) => r.done));
      if (!(await within(inFlight(), graceMs))) {
        for (const r of this.runs.values()) r.controller.abort(new WorkerShutdownError());
        await within(inFlight(), 2000);
      }
      for (const r of this.runs.values()) this.stopHeartbeat(r);
    }
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    if (this.ownsRelay && this.relay) {
      await this.relay.flushOnce().catch(() => undefined);
      await this.relay.stop();
    }
  }

  /**
   * Simulates a worker that freezes (killed, paused, partitioned): it stops claiming and
   * heartbeating at once and never releases its leases. Code already running goes on, and its
   * writes are refused (fenced) once another worker has claimed the operation.
   */
  halt(): void {
    this.halted = true;
    this.running = false;
    this.clearPoll();
    void this.archiver.stop();
    for (const r of this.runs.values()) this.stopHeartbeat(r);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private clearPoll(): void {
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.clearPoll();
    // Scans belong to no request, though a request's enqueue may be what nudged them.
    this.pollTimer = setTimeout(
      detached(() => void this.scan()),
      ms,
    );
  }

  private async scan(): Promise<void> {
    this.pollTimer = undefined;
    if (!this.running || this.scanning) return;
    const run = (async () => {
      try {
        await this.claimWhileFree();
      } catch (e) {
        this.log.warn({ err: redactMessage(e) }, 'claim scan failed');
      }
    })();
    this.scanning = run;
    await run;
    this.scanning = undefined;
    const again = this.scanAgain;
    this.scanAgain = false;
    this.schedule(again ? 0 : this.pollMs);
  }

  private async claimWhileFree(): Promise<void> {
    const types = [...this.executors.keys()];
    if (types.length === 0) return;
    while (this.running && this.runs.size < this.concurrency) {
      const now = new Date();
      const free = this.concurrency - this.runs.size;
      const candidates = await this.store.candidates(types, now, free + 8);
      if (candidates.length === 0) return;
      let claimed = false;
      for (const c of candidates) {
        if (!this.running || this.runs.size >= this.concurrency) return;
        if (this.runs.has(c._id)) continue;
        const doc = await this.tryClaim(c, now);
        if (doc) {
          claimed = true;
          this.launch(doc);
        }
      }
      // Every candidate went to other workers: wait for the next tick rather than spin.
      if (!claimed) return;
    }
  }

  private async tryClaim(c: Candidate, now: Date): Promise<OperationDoc | null> {
    if (c.status === 'running' && c.attempt >= c.maxAttempts + RESUME_ALLOWANCE) {
      const msg = `operation abandoned after ${c.attempt} attempts whose workers stopped responding`;
      if (await this.store.abandon(c, 'operation_abandoned', msg, now)) {
        this.stats.failed++;
        this.log.error({ operationId: c._id, attempt: c.attempt }, 'operation abandoned');
        this.relay?.nudge();
      }
      return null;
    }
    const doc = await this.store.claim(c, this.workerId, this.leaseMs, now);
    if (doc) {
      this.stats.claimed++;
      this.relay?.nudge();
    }
    return doc;
  }

  private launch(op: OperationDoc): void {
    const fence: Fence = { id: op._id, owner: this.workerId, token: op.lease.token };
    const controller = new AbortController();
    const run: Run = {
      fence,
      current: { status: op.status, step: op.step },
      controller,
      heartbeat: undefined,
      deadline: undefined,
      done: Promise.resolve(),
    };
    // Past the overall deadline the attempt is aborted and the operation fails for good.
    if (op.deadlineAt) {
      const left = new Date(op.deadlineAt).getTime() - Date.now();
      const overrun = () => {
        if (!controller.signal.aborted) controller.abort(new OperationDeadlineError(op._id));
      };
      if (left <= 0) overrun();
      else run.deadline = setTimeout(overrun, left);
    }
    // A claim that lands after halt() gets no heartbeats: its lease expires like the others.
    if (!this.halted) run.heartbeat = setInterval(() => void this.beat(run), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.runs.set(op._id, run);
    const span = { parent: contextFromTraceparent(op.traceparent ?? undefined), attributes: { 'platform.operation.id': op._id } };
    run.done = inSpan(`operation ${op.operationType}`, span, () => this.execute(op, run)).finally(() => {
      this.stopHeartbeat(run);
      if (run.deadline) clearTimeout(run.deadline);
      this.runs.delete(op._id);
      this.nudge();
    });
  }

  private stopHeartbeat(run: Run): void {
    if (run.heartbeat) clearInterval(run.heartbeat);
    run.heartbeat = undefined;
  }

  private lost(run: Run): LeaseLostError {
    const err = new LeaseLostError(run.fence.id);
    this.stopHeartbeat(run);
    if (!run.controller.signal.aborted) run.controller.abort(err);
    return err;
  }

  private async beat(run: Run): Promise<void> {
    try {
      if (!(await this.store.heartbeat(run.fence, this.leaseMs))) {
        this.log.warn({ operationId: run.fence.id }, 'lease lost; aborting');
        this.lost(run);
      }
    } catch (e) {
      // The database is unreachable: keep trying; if the lease expires meanwhile, the next beat sees it.
      this.log.warn({ operationId: run.fence.id, err: redactMessage(e) }, 'heartbeat failed');
    }
  }

  /** A fenced write; a refusal marks the run lost and throws. */
  private async fencedWrite(run: Run, write: () => Promise<boolean>): Promise<void> {
    if (await write()) return;
    this.stats.fencedWrites++;
    throw this.lost(run);
  }

  private context(op: OperationDoc, run: Run): OperationContext {
    const steps: OperationStep[] = op.steps.map((s) => ({ ...s }));
    const log = this.log.child({ operationId: op._id, operationType: op.operationType, attempt: op.attempt });
    const signal = run.controller.signal;
    const checkSignal = () => {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new LeaseLostError(op._id);
    };
    return {
      op,
      signal,
      log,
      fence: `${op._id}:${op.lease.token}`,
      heartbeat: async () => {
        checkSignal();
        await this.fencedWrite(run, () => this.store.heartbeat(run.fence, this.leaseMs));
      },
      step: async <T>(id: string, fn: (s: StepContext) => Promise<T>, stepOpts: { timeoutMs?: number } = {}): Promise<T> => {
        checkSignal();
        let index = steps.findIndex((s) => s.id === id);
        const prior = index >= 0 ? steps[index] : undefined;
        if (prior?.status === 'completed') {
          log.debug({ step: id }, 'step already completed; skipped');
          return prior.result as T;
        }
        const now = new Date();
        const entry: OperationStep = {
          id,
          status: 'running',
          startedAt: now,
          finishedAt: null,
          attempts: (prior?.attempts ?? 0) + 1,
          detail: null,
          result: null,
        };
        const isNew = index < 0;
        if (isNew) index = steps.length;
        steps[index] = entry;
        const emit = run.current.status !== 'running' || run.current.step !== id;
        run.current = { status: 'running', step: id };
        await this.fencedWrite(run, () => this.store.stepStarted(run.fence, op, index, entry, isNew, emit, now));
        if (emit) this.relay?.nudge();
        let result: T;
        const timeoutMs = stepOpts.timeoutMs ?? this.stepTimeoutMs;
        const stepController = new AbortController();
        const follow = () => stepController.abort(signal.reason);
        signal.addEventListener('abort', follow, { once: true });
        const timer = setTimeout(() => stepController.abort(new StepTimeoutError(id, timeoutMs)), timeoutMs);
        // The step ends at its deadline even when `fn` never looks at its signal.
        const abandoned = new Promise<never>((_, reject) =>
          stepController.signal.addEventListener('abort', () => reject(stepController.signal.reason), { once: true }),
        );
        abandoned.catch(() => undefined);
        try {
          let lastProgressAt = 0;
          const progress = async (detail: string) => {
            const now = Date.now();
            if (entry.status !== 'running' || now - lastProgressAt < PROGRESS_INTERVAL_MS) return;
            lastProgressAt = now;
            entry.detail = detail.slice(0, 300);
            await this.fencedWrite(run, () => this.store.stepProgress(run.fence, index, entry.detail!));
          };
          result = await Promise.race([
            fn({ idempotencyToken: `${op._id}:${id}`, signal: stepController.signal, progress }),
            abandoned,
          ]);
        } catch (e) {
          if (!signal.aborted) {
            entry.status = 'failed';
            const detail = redactMessage(e);
            await this.fencedWrite(run, () => this.store.stepFinished(run.fence, index, 'failed', null, detail, new Date()));
          }
          throw e;
        } finally {
          clearTimeout(timer);
          signal.removeEventListener('abort', follow);
        }
        checkSignal();
        entry.status = 'completed';
        entry.result = result === undefined ? null : result;
        await this.fencedWrite(run, () => this.store.stepFinished(run.fence, index, 'completed', entry.result, null, new Date()));
        return result;
      },
    };
  }

  private async execute(op: OperationDoc, run: Run): Promise<void> {
    const executor = this.executors.get(op.operationType);
    const log = this.log.child({ operationId: op._id, operationType: op.operationType, attempt: op.attempt });
    const ctx = this.context(op, run);
    let result: unknown;
    let failure: unknown;
    let ok = false;
    try {
      if (!executor) throw new PlatformError('unknown_operation_type', 500, `no executor for ${op.operationType}`);
      result = await executor(ctx);
      ok = true;
    } catch (e) {
      failure = e;
    }
    try {
      const reason: unknown = run.controller.signal.reason;
      if (failure instanceof LeaseLostError || reason instanceof LeaseLostError) {
        this.stats.leaseLost++;
        operationRuns.inc({ type: op.operationType, outcome: 'lease_lost' });
        log.warn('lease lost; another worker resumes the operation');
        return;
      }
      if (ok) {
        if (await this.store.complete(run.fence, op, result)) {
          this.stats.completed++;
          operationRuns.inc({ type: op.operationType, outcome: 'completed' });
          log.info('operation completed');
        } else {
          this.stats.fencedWrites++;
          this.stats.leaseLost++;
          operationRuns.inc({ type: op.operationType, outcome: 'lease_lost' });
          log.warn('completion refused: lease lost');
        }
        return;
      }
      if (reason instanceof WorkerShutdownError) {
        if (await this.store.release(run.fence)) {
          this.stats.released++;
          operationRuns.inc({ type: op.operationType, outcome: 'released' });
        }
        return;
      }
      await this.finishWithError(op, run, failure, log);
    } catch (e) {
      // The database is unreachable: the lease expires and another worker resumes the operation.
      log.error({ err: redactMessage(e) }, 'could not record the outcome of an operation');
    } finally {
      this.relay?.nudge();
    }
  }

  private async finishWithError(op: OperationDoc, run: Run, failure: unknown, log: Logger): Promise<void> {
    const code = errorCodeOf(failure);
    const message = failure instanceof Error ? failure.message : String(failure);
    const step = run.current.step;
    if (willRetry(op, failure)) {
      const delay = Math.min(this.maxRetryDelayMs, this.retryBaseMs * 2 ** Math.max(0, op.attempt - 1));
      const runAfter = new Date(Date.now() + delay);
      if (await this.store.retry(run.fence, op, step, code, message, runAfter)) {
        this.stats.retried++;
        operationRuns.inc({ type: op.operationType, outcome: 'retried' });
        log.warn({ errorCode: code, err: redactMessage(message), delayMs: delay }, 'operation failed; will retry');
        const t = setTimeout(() => {
          this.timers.delete(t);
          this.nudge();
        }, delay + 5);
        this.timers.add(t);
      } else this.stats.fencedWrites++;
      return;
    }
    if (await this.store.fail(run.fence, op, step, code, message)) {
      this.stats.failed++;
      operationRuns.inc({ type: op.operationType, outcome: 'failed' });
      log.error({ errorCode: code, err: redactMessage(message) }, 'operation failed');
    } else this.stats.fencedWrites++;
  }
}

/** The retry rule: after `failure`, the operation runs again when it is retriable and attempts remain. */
export function willRetry(op: Pick<OperationDoc, 'attempt' | 'maxAttempts'>, failure: unknown): boolean {
  const retriable = !isPlatformError(failure) || failure.retriable;
  return retriable && op.attempt < op.maxAttempts;
}

/** The `error_code` a failure is recorded with. */
export const errorCodeOf = (failure: unknown): string => (isPlatformError(failure) ? failure.code : 'internal_error');

async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
