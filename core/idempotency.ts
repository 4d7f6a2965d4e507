import { createHash } from 'node:crypto';
import mongoose, { type Connection, type Model } from 'mongoose';
import { config } from './config';
import { conflict, isPlatformError, PlatformError } from './errors';
import type { Logger } from './logger';
import { isDuplicateKey, model } from './mongo';

/** How long a stored response replays for one key: 24 hours. Expiry is by a purge timer (no TTL indexes). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
/**
 * How long the attempt holding a key may go silent before a retry takes the key over. The holder
 * renews it every third of that while it runs; a crashed process stops renewing, so a retry after
 * this long resumes its work instead of waiting 24 hours.
 */
export const IDEMPOTENCY_LEASE_MS = 10_000; // the default of config().IDEMPOTENCY_LEASE_MS
/** How often expired records are purged. */
export const IDEMPOTENCY_PURGE_INTERVAL_MS = 10 * 60 * 1000;

interface StoredError {
  code: string;
  status: number;
  message: string;
  details: Record<string, unknown>;
}

interface IdempotencyRecord {
  _id: string;
  requestHash: string;
  state: 'in_progress' | 'done';
  /** Every write of the record is conditional on `{_id, rev}` and bumps it (one unique index). */
  rev: number;
  /**
   * Ids chosen when the key was first claimed (e.g. the project and operation a create will make):
   * every attempt of the key uses the same ones, so a retry resumes the work instead of repeating it.
   */
  plan: Record<string, string>;
  leaseUntil: Date | null;
  /** Set before the first write outside this record; from then on the key is never released. */
  sideEffectsAt: Date | null;
  attempts: number;
  response?: unknown;
  /** A definitive (4xx) failure after side effects began: replayed as the same error. */
  error?: StoredError | null;
  createdAt: Date;
  expiresAt: Date;
}

const schema = new mongoose.Schema<IdempotencyRecord>(
  {
    _id: { type: String, required: true },
    requestHash: { type: String, required: true },
    state: { type: String, required: true },
    rev: { type: Number, required: true },
    plan: { type: mongoose.Schema.Types.Mixed, default: {} },
    leaseUntil: { type: Date, default: null },
    sideEffectsAt: { type: Date, default: null },
    attempts: { type: Number, default: 1 },
    response: { type: mongoose.Schema.Types.Mixed },
    error: { type: mongoose.Schema.Types.Mixed, default: null },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_keys', versionKey: false, minimize: false },
);
// The hot conditional update `{_id, rev}` matches this unique index exactly (decision 0001: any
// other filter is a full scan of the collection on the MongoDB-wire server).
schema.index({ _id: 1, rev: 1 }, { unique: true });

export function hashInput(input: unknown): string {
  return createHash('sha256').update(stableStringify(input)).digest('hex');
}

function stableStringify(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stableStringify(o[k])}`)
    .join(',')}}`;
}

export interface IdempotencyCodes {
  conflict: string;
  inProgress: string;
}

/** What the work under a key is given. */
export interface IdempotentAttempt {
  /** The ids fixed when the key was first claimed; the same for every attempt of the key. */
  readonly plan: Record<string, string>;
  /** True when an earlier attempt of this key began side effects and did not finish them. */
  readonly resumed: boolean;
  /**
   * Call before the first write outside the idempotency record. From then on a failure never
   * releases the key: a retry resumes with the same plan. Throws 409 when the lease was lost.
   */
  sideEffectsBegin(): Promise<void>;
}

export interface RunOptions {
  /** Chooses the ids the work will create (called once per key, on the first claim). */
  plan?: () => Record<string, string>;
}

/**
 * Exactly-once requests under an `Idempotency-Key`:
 * - same key + same input replays the stored response; a different input is 409 `conflict`;
 * - while an attempt holds the key (a short lease it renews) another is 409 `in_progress`;
 * - an attempt that crashed stops renewing, and a retry takes the key over after the lease and
 *   resumes with the same planned ids (the work must be idempotent per id);
 * - a failure before side effects releases the key; after, it never does: a definitive 4xx is
 *   stored and replayed, anything else leaves the key for a retry to resume at once.
 */
export class IdempotencyStore {
  readonly model: Model<IdempotencyRecord>;
  constructor(
    conn: Connection,
    private readonly codes: IdempotencyCodes = {
      conflict: 'idempotency_conflict',
      inProgress: 'idempotency_in_progress',
    },
    private readonly leaseMs = config().IDEMPOTENCY_LEASE_MS,
  ) {
    this.model = model(conn, 'core', 'IdempotencyRecord', schema);
  }

  async run<T>(
    scope: string,
    key: string,
    input: unknown,
    fn: (attempt: IdempotentAttempt) => Promise<T>,
    opts: RunOptions = {},
  ): Promise<{ replayed: boolean; value: T }> {
    const id = `${scope}:${key}`;
    const requestHash = hashInput(input);
    for (let tries = 0; ; tries++) {
      if (tries > 20) throw conflict(this.codes.inProgress, 'a request with this Idempotency-Key is still in progress');
      const outcome = await this.claim(id, requestHash, opts);
      if (outcome.kind === 'retry') continue;
      if (outcome.kind === 'replay') {
        const rec = outcome.record;
        if (rec.error) throw new PlatformError(rec.error.code, rec.error.status, rec.error.message, rec.error.details);
        return { replayed: true, value: rec.response as T };
      }
      return this.execute(id, outcome.record, outcome.resumed, fn);
    }
  }

  private async claim(
    id: string,
    requestHash: string,
    opts: RunOptions,
  ): Promise<
    | { kind: 'claimed'; record: IdempotencyRecord; resumed: boolean }
    | { kind: 'replay'; record: IdempotencyRecord }
    | { kind: 'retry' }
  > {
    const now = new Date();
    const fresh = (rev: number): IdempotencyRecord => ({
      _id: id,
      requestHash,
      state: 'in_progress',
      rev,
      plan: opts.plan?.() ?? {},
      leaseUntil: new Date(now.getTime() + this.leaseMs),
      sideEffectsAt: null,
      attempts: 1,
      error: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS),
    });
    try {
      const record = fresh(1);
      await this.model.create(record);
      return { kind: 'claimed', record, resumed: false };
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const existing = await this.model.findById(id).lean<IdempotencyRecord>();
    if (!existing) return { kind: 'retry' };
    if (existing.expiresAt < now) {
      // Past retention: the key starts over, as if it had never been used.
      const record = fresh(existing.rev + 1);
      const { _id, ...rest } = record;
      const taken = await this.model.updateOne({ _id, rev: existing.rev }, { $set: rest, $unset: { response: 1 } });
      return taken.matchedCount === 1 ? { kind: 'claimed', record, resumed: false } : { kind: 'retry' };
    }
    if (existing.requestHash !== requestHash) {
      throw conflict(this.codes.conflict, 'Idempotency-Key was already used with a different request');
    }
    if (existing.state === 'done') return { kind: 'replay', record: existing };
    if (existing.leaseUntil && existing.leaseUntil > now) {
      throw conflict(this.codes.inProgress, 'a request with this Idempotency-Key is still in progress');
    }
    // The holder went silent (crashed, or gave the key back after a failure): take it over.
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const taken = await this.model.updateOne(
      { _id: id, rev: existing.rev },
      { $set: { rev: existing.rev + 1, leaseUntil, attempts: existing.attempts + 1 } },
    );
    if (taken.matchedCount !== 1) return { kind: 'retry' };
    return {
      kind: 'claimed',
      record: { ...existing, rev: existing.rev + 1, leaseUntil, attempts: existing.attempts + 1 },
      resumed: existing.sideEffectsAt !== null,
    };
  }

  private async execute<T>(
    id: string,
    claimed: IdempotencyRecord,
    resumed: boolean,
    fn: (attempt: IdempotentAttempt) => Promise<T>,
  ): Promise<{ replayed: boolean; value: T }> {
    let rev = claimed.rev;
    let lost = false;
    let sideEffects = claimed.sideEffectsAt !== null;
    // Writes of this attempt run one after another, each conditional on the revision it last wrote.
    let chain: Promise<unknown> = Promise.resolve();
    const write = (set: Partial<IdempotencyRecord>): Promise<boolean> => {
      const next = chain.then(async () => {
        if (lost) return false;
        const r = await this.model.updateOne({ _id: id, rev }, { $set: { ...set, rev: rev + 1 } });
        if (r.matchedCount === 1) rev++;
        else lost = true;
        return !lost;
      });
      chain = next.catch(() => undefined);
      return next;
    };
    const heartbeat = setInterval(
      () => void write({ leaseUntil: new Date(Date.now() + this.leaseMs) }).catch(() => undefined),
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    heartbeat.unref();
    const attempt: IdempotentAttempt = {
      plan: claimed.plan ?? {},
      resumed,
      sideEffectsBegin: async () => {
        if (sideEffects) return;
        if (!(await write({ sideEffectsAt: new Date() }))) {
          throw conflict(this.codes.inProgress, 'a request with this Idempotency-Key is still in progress');
        }
        sideEffects = true;
      },
    };
    let value: T;
    try {
      value = await fn(attempt);
    } catch (e) {
      clearInterval(heartbeat);
      const release = async () => {
        await chain;
        if (!lost) await this.model.deleteOne({ _id: id, rev });
      };
      await this.failed(e, sideEffects, write, release).catch(() => undefined);
      throw e;
    }
    clearInterval(heartbeat);
    // If this write fails the key stays in progress; a retry resumes with the same plan and ends here.
    await write({ state: 'done', response: value as unknown, leaseUntil: null });
    return { replayed: false, value };
  }

  private async failed(
    e: unknown,
    sideEffects: boolean,
    write: (set: Partial<IdempotencyRecord>) => Promise<boolean>,
    release: () => Promise<void>,
  ): Promise<void> {
    // Nothing happened outside this record: give the key back so a retry runs from the start.
    if (!sideEffects) return release();
    if (isPlatformError(e) && e.status < 500) {
      const error: StoredError = { code: e.code, status: e.status, message: e.message, details: e.details };
      await write({ state: 'done', error, leaseUntil: null });
      return;
    }
    // An unexpected failure after side effects: the key stays, free for a retry to resume at once.
    await write({ leaseUntil: new Date(0) });
  }

  /** Deletes records past their retention; returns how many. */
  async purgeExpired(now = new Date()): Promise<number> {
    const r = await this.model.deleteMany({ expiresAt: { $lt: now } });
    return r.deletedCount ?? 0;
  }

  /** Purges expired records now and then every `intervalMs`; returns the stop function. */
  startPurge(log?: Logger, intervalMs = IDEMPOTENCY_PURGE_INTERVAL_MS): () => void {
    const tick = () =>
      void this.purgeExpired()
        .then((n) => n > 0 && log?.info({ purged: n }, 'expired idempotency keys purged'))
        .catch((e) => log?.warn({ err: e }, 'idempotency purge failed'));
    tick();
    const timer = setInterval(tick, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}
