import { PlatformError } from '../../core/errors';

/**
 * The public audit's guards (spec 8), kept in this process's memory: they protect this process's
 * resolvers and outbound DNS traffic, so a per-process count is what they need to be.
 */
/** Audits running at once (spec 8); one more is `audit_busy`. */
export const AUDIT_MAX_CONCURRENT = 8;
/** Requests per client IP per minute (spec 8); one more is `rate_limited`. */
export const AUDIT_RATE_PER_MINUTE = 12;
export const AUDIT_RATE_WINDOW_MS = 60_000;
/** Finished audits are answered from memory for two minutes, at most 128 of them (spec 8). */
export const AUDIT_CACHE_TTL_MS = 120_000;
export const AUDIT_CACHE_MAX = 128;

export const auditBusy = () =>
  new PlatformError('audit_busy', 503, `${AUDIT_MAX_CONCURRENT} audits are already running; try again in a few seconds`, {
    retry_after_seconds: 2,
  });

/** A sliding one-minute window of request times per client IP. */
export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly perWindow = AUDIT_RATE_PER_MINUTE,
    private readonly windowMs = AUDIT_RATE_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request; throws 429 `rate_limited` past the limit (a refused request does not count). */
  take(client: string): void {
    const t = this.now();
    const recent = (this.hits.get(client) ?? []).filter((at) => t - at < this.windowMs);
    if (recent.length >= this.perWindow) {
      const retry = Math.max(1, Math.ceil((recent[0] + this.windowMs - t) / 1000));
      this.hits.set(client, recent);
      throw new PlatformError('rate_limited', 429, `at most ${this.perWindow} audit requests per minute from one address`, {
        retry_after_seconds: retry,
      });
    }
    recent.push(t);
    this.hits.set(client, recent);
    // Forget idle clients now and then so the map stays the size of the last minute's clients.
    if (this.hits.size > 10_000) for (const [k, v] of this.hits) if (!v.some((at) => t - at < this.windowMs)) this.hits.delete(k);
  }
}

/** A time-bounded LRU: Map keeps insertion order, so the first key is the least recently used. */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();

  constructor(
    private readonly ttlMs = AUDIT_CACHE_TTL_MS,
    private readonly max = AUDIT_CACHE_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    if (this.now() - hit.at >= this.ttlMs) return undefined;
    this.entries.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at: this.now() });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as string);
  }
}
