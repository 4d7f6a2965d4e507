import { z } from 'zod';
import { parseAllowHosts } from '../../../core/outbound-http';

/**
 * Webhook delivery settings, read from the same environment as the area's settings. Defaults are
 * spec 8's object-store push figures, reused for asset webhooks: backoff from 30 s doubling to at
 * most 1 h, ten failed attempts exhaust automatic delivery, 10 s per request, 2 KiB of response kept.
 */
export const webhookSettingsSchema = z.object({
  ASSETS_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().positive().default(30_000),
  ASSETS_WEBHOOK_RETRY_MAX_MS: z.coerce.number().int().positive().default(3_600_000),
  ASSETS_WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().positive().default(10),
  ASSETS_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Claim of one attempt; a worker that dies mid-send loses it after this long (ms). */
  ASSETS_WEBHOOK_LEASE_MS: z.coerce.number().int().positive().default(30_000),
  ASSETS_WEBHOOK_POLL_MS: z.coerce.number().int().positive().default(500),
  /** docs/contracts.md: hosts (tests: `127.0.0.1`) reachable despite the outbound rules. */
  OUTBOUND_ALLOW_HOSTS: z.string().optional().transform(parseAllowHosts),
});
export type WebhookSettings = z.infer<typeof webhookSettingsSchema>;
export const RESPONSE_EXCERPT_BYTES = 2048;
