import { z } from 'zod';
import { retryWaitMs } from '../../core/delivery/engine';

/** Spec 8: a pull claim lasts 15 minutes. */
export const CLAIM_LEASE_MS = 15 * 60 * 1000;
/** docs/contracts.md: a delivery acknowledged with `retry: true` is available again within 30 s. */
export const PULL_RETRY_DELAY_MS = 10_000;
/** Spec 8: push backoff starts at 30 s, doubles, and is capped at one hour. */
export const PUSH_BACKOFF_BASE_MS = 30_000;
export const PUSH_BACKOFF_CAP_MS = 60 * 60 * 1000;
/** Spec 8: the tenth failed attempt exhausts automatic delivery. */
export const PUSH_MAX_FAILURES = 10;
/** Spec 8: outbound request timeout. */
export const PUSH_TIMEOUT_MS = 10_000;
/** Spec 8: response retained up to 2 KiB. */
export const RESPONSE_EXCERPT_BYTES = 2048;
/** Spec 8: history page up to 50. */
export const HISTORY_PAGE_MAX = 50;
/** Pull batch: default and largest. */
export const PULL_BATCH_DEFAULT = 10;
export const PULL_BATCH_MAX = 100;

const ms = (d: number) => z.coerce.number().int().min(0).default(d);

/** The area's env settings; timings are injectable so tests need not wait 30 s or 15 minutes. */
export const objstoreConfig = z.object({
  OBJSTORE_CLAIM_LEASE_MS: ms(CLAIM_LEASE_MS),
  OBJSTORE_PULL_RETRY_DELAY_MS: ms(PULL_RETRY_DELAY_MS),
  OBJSTORE_PUSH_BACKOFF_BASE_MS: ms(PUSH_BACKOFF_BASE_MS),
  OBJSTORE_PUSH_BACKOFF_CAP_MS: ms(PUSH_BACKOFF_CAP_MS),
  OBJSTORE_PUSH_TIMEOUT_MS: ms(PUSH_TIMEOUT_MS),
  /** Idle pause of the push worker between scans (writes nudge it at once). */
  OBJSTORE_PUSH_POLL_MS: ms(500),
  /** Parallel sends of one push worker. */
  OBJSTORE_PUSH_CONCURRENCY: z.coerce.number().int().min(1).default(32),
  /** Hosts a push may reach although private or plain HTTP (tests: `127.0.0.1`); never on by default. */
  OUTBOUND_ALLOW_HOSTS: z.string().default(''),
});

export type ObjstoreSettings = z.infer<typeof objstoreConfig>;

/** Settings with every default (unit tests and schema-only builds). */
export const defaultSettings = (over: Partial<ObjstoreSettings> = {}): ObjstoreSettings => ({
  ...objstoreConfig.parse({}),
  ...over,
});

/** Delay before the next push attempt after `failures` failures: 30 s, 60 s, 120 s … capped at 1 h (the kernel's schedule). */
export function pushBackoffMs(failures: number, baseMs: number, capMs: number): number {
  return retryWaitMs(failures, { retryBaseMs: baseMs, retryMaxMs: capMs });
}
