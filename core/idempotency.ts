import { createHash } from 'node:crypto';
import mongoose, { type Connection, type Model } from 'mongoose';
import { conflict } from './errors';
import { isDuplicateKey, model } from './mongo';

/** How long a stored response replays for one key: 24 hours. Expiry is by query (no TTL indexes). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;

interface IdempotencyRecord {
  _id: string;
  requestHash: string;
  state: 'in_progress' | 'done';
  response?: unknown;
  createdAt: Date;
  expiresAt: Date;
}

const schema = new mongoose.Schema<IdempotencyRecord>(
  {
    _id: { type: String, required: true },
    requestHash: { type: String, required: true },
    state: { type: String, required: true },
    response: { type: mongoose.Schema.Types.Mixed },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_keys', versionKey: false, minimize: false },
);

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

/**
 * Same key + same input replays the stored response; same key + different input is a conflict;
 * a key whose first request is still running is a conflict too (409). A failed first attempt
 * releases the key so the client may retry with it.
 */
export class IdempotencyStore {
  readonly model: Model<IdempotencyRecord>;
  constructor(
    conn: Connection,
    private readonly codes: IdempotencyCodes = {
      conflict: 'idempotency_conflict',
      inProgress: 'idempotency_in_progress',
    },
  ) {
    this.model = model(conn, 'core', 'IdempotencyRecord', schema);
  }

  async run<T>(scope: string, key: string, input: unknown, fn: () => Promise<T>): Promise<{ replayed: boolean; value: T }> {
    const id = `${scope}:${key}`;
    const requestHash = hashInput(input);
    const now = new Date();
    const claimed = await this.claim(id, requestHash, now);
    if (!claimed) {
      const existing = await this.model.findById(id).lean();
      if (!existing) return this.run(scope, key, input, fn);
      if (existing.requestHash !== requestHash) {
        throw conflict(this.codes.conflict, 'Idempotency-Key was already used with a different request');
      }
      if (existing.state !== 'done') {
        throw conflict(this.codes.inProgress, 'a request with this Idempotency-Key is still in progress');
      }
      return { replayed: true, value: existing.response as T };
    }
    try {
      const value = await fn();
      await this.model.updateOne({ _id: id }, { $set: { state: 'done', response: value } });
      return { replayed: false, value };
    } catch (e) {
      await this.model.deleteOne({ _id: id, state: 'in_progress' });
      throw e;
    }
  }

  /** Inserts the key, or takes over an expired one; false when a live record holds it. */
  private async claim(id: string, requestHash: string, now: Date): Promise<boolean> {
    const record = {
      requestHash,
      state: 'in_progress' as const,
      createdAt: now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS),
    };
    try {
      await this.model.create({ _id: id, ...record });
      return true;
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    const taken = await this.model.findOneAndUpdate(
      { _id: id, expiresAt: { $lt: now } },
      { $set: record, $unset: { response: 1 } },
    );
    return taken !== null;
  }
}
