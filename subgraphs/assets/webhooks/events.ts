import { createHash } from 'node:crypto';

/** Webhook event types of the assets area (docs/contracts.md; spec 6.2 leaves them open). */
export const ASSET_WEBHOOK_EVENT_TYPES = [
  'asset.created',
  'asset.updated',
  'asset.deleted',
  'asset.processed',
  'asset.quarantined',
  'job.finished',
] as const;
export type AssetWebhookEventType = (typeof ASSET_WEBHOOK_EVENT_TYPES)[number];

/** One event as the webhooks fan it out; `id` is stable, so the same change never makes two deliveries. */
export interface AssetWebhookEvent {
  id: string;
  type: AssetWebhookEventType;
  accountId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
  /**
   * Order among events of one change that share `occurredAt` (0 to 15; `asset.created` 0, then
   * `asset.processed` 1): deliveries of one asset to one webhook go out in (`occurredAt`, `order`)
   * order (decision 0101).
   */
  order?: number;
}

/** Where areas of the assets code hand events to the webhooks (the fan-out is idempotent on `id`). */
export interface AssetWebhookEmitter {
  emit(event: AssetWebhookEvent): Promise<void>;
}

export const noWebhooks: AssetWebhookEmitter = { emit: async () => undefined };

/** A UUID-shaped id derived from a stable name (an event or job named by what caused it). */
export function stableId(name: string): string {
  const h = createHash('sha256').update(name).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
