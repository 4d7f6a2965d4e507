/**
 * The delivery rules every signed webhook of the platform follows (Assets, mail): one place for the
 * headers of Standard Webhooks, the outcome of an attempt and the retry schedule, so a fix lands once.
 * The record is `./record.ts`, the lease-based claim and the worker `./worker.ts`
 * (docs/decisions/0230-one-delivery-engine.md).
 */

/** The Standard Webhooks headers: `webhook-id` is the event id, the same on every retry (receivers deduplicate). */
export function webhookHeaders(eventId: string, at: Date, signature: string, userAgent: string): Record<string, string> {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': Math.floor(at.getTime() / 1000).toString(),
    'webhook-signature': signature,
    'user-agent': userAgent,
  };
}

/** The platform's retry schedule: the first retry after 30 s, doubling, no wait longer than 1 h. */
export const RETRY_BASE_MS = 30_000;
export const RETRY_MAX_MS = 3_600_000;

export interface RetrySchedule {
  /** First retry after this many ms, doubling each attempt. */
  retryBaseMs: number;
  /** No wait is longer. */
  retryMaxMs: number;
  /** Attempts in all before a delivery fails. */
  maxAttempts: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** The wait after failed attempt number `count` (1-based): `min(max, base · 2^(count-1))`. */
export function retryWaitMs(count: number, schedule: Pick<RetrySchedule, 'retryBaseMs' | 'retryMaxMs'>): number {
  return Math.min(schedule.retryMaxMs, schedule.retryBaseMs * 2 ** Math.max(0, count - 1));
}

/**
 * What attempt number `count` (1-based) leads to: a 2xx succeeds; otherwise the delivery waits
 * `min(max, base · 2^(count-1))` for its next attempt, or fails when the attempts are used up or its
 * endpoint is gone.
 */
export function attemptOutcome(
  statusCode: number | null,
  count: number,
  schedule: RetrySchedule,
  endpointGone: boolean,
  done: Date,
): { ok: boolean; status: DeliveryStatus; nextAttemptAt: Date | null } {
  const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
  const exhausted = !ok && (endpointGone || count >= schedule.maxAttempts);
  const wait = retryWaitMs(count, schedule);
  const status: DeliveryStatus = ok ? 'succeeded' : exhausted ? 'failed' : 'pending';
  return { ok, status, nextAttemptAt: status === 'pending' ? new Date(done.getTime() + wait) : null };
}
