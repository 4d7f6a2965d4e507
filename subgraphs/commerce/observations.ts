import { findPage } from '../../core/keyset';
import { newId } from '../../core/ids';
import { isDuplicateKey } from '../../core/mongo';
import { type AnalyticsView, buildAnalytics, normalizeRange, rangeStart } from './analytics';
import { commerceNotFound, invalidConfiguration } from './errors';
import { DEFAULT_PAGE, MAX_PAGE } from './limits';
import type { CommerceModels, WebhookObservationDoc } from './model';
import { readCursor } from './releases';
import { verifyWebhook } from './webhook-signature';

/** A verified body is kept whole up to 16 KiB; a larger one keeps only its size. */
export const MAX_KEPT_PAYLOAD_BYTES = 16 * 1024;
/** `platform commerce traffic` records at most this many requests at once. */
export const MAX_TRAFFIC_RECORD = 1_000_000;

export type ReceiveResult = { status: 200; recorded: number; duplicate: number } | { status: 400 | 401; reason: string };

export interface WebhookView {
  id: string;
  topic: string;
  storeDomain: string;
  payload: unknown;
  signatureVerified: boolean;
  receivedAt: Date;
}

const view = (o: WebhookObservationDoc): WebhookView => ({
  id: o.webhookId,
  topic: o.topic,
  storeDomain: o.storeDomain,
  payload: o.payload,
  signatureVerified: true,
  receivedAt: o.receivedAt,
});

/** Webhook observations (spec 6.3) and recorded storefront traffic for analytics (spec 8). */
export class Observations {
  constructor(
    private readonly models: CommerceModels,
    private readonly webhookSecret: () => string,
  ) {}

  /**
   * The inbound receiver: verifies the signature over the exact raw bytes before parsing, then
   * records one observation per connection of the store. A webhook seen before (same id) is not
   * recorded twice, and is answered 200 so the sender stops retrying.
   */
  async receive(headers: Record<string, string | string[] | undefined>, raw: Buffer): Promise<ReceiveResult> {
    const verdict = verifyWebhook(this.webhookSecret(), headers, raw);
    if (!verdict.ok) return { status: 401, reason: verdict.reason };
    let body: { topic?: unknown; shop_domain?: unknown };
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return { status: 400, reason: 'body is not JSON' };
    }
    const topic = typeof body.topic === 'string' ? body.topic : String(headers['x-commerce-topic'] ?? '');
    const domain = typeof body.shop_domain === 'string' ? body.shop_domain : String(headers['x-commerce-shop-domain'] ?? '');
    if (!topic || !domain) return { status: 400, reason: 'topic or shop domain missing' };
    const connections = await this.models.Connection.find({ storeDomain: domain }, { _id: 1 }).lean();
    let recorded = 0;
    let duplicate = 0;
    for (const c of connections) {
      try {
        await this.models.Webhook.create({
          _id: `${c._id}:${verdict.id}`,
          projectId: c._id,
          webhookId: verdict.id,
          topic,
          storeDomain: domain,
          payload: raw.length <= MAX_KEPT_PAYLOAD_BYTES ? body : null,
          bodyBytes: raw.length,
          receivedAt: new Date(),
        });
        recorded++;
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        duplicate++;
      }
    }
    return { status: 200, recorded, duplicate };
  }

  async list(projectId: string, limit = DEFAULT_PAGE, cursor: string | null = null) {
    const size = Math.min(Math.max(1, Math.floor(limit) || DEFAULT_PAGE), MAX_PAGE);
    const page = await findPage<WebhookObservationDoc>(
      this.models.Webhook,
      { projectId },
      { field: 'receivedAt', binding: `webhooks:${projectId}`, decode: readCursor, limit: size, cursor },
    );
    return { items: page.items.map(view), nextCursor: page.nextCursor };
  }

  async get(projectId: string, webhookId: string): Promise<WebhookView> {
    const o = await this.models.Webhook.findById(`${projectId}:${webhookId}`).lean();
    if (!o) throw commerceNotFound('webhook observation');
    return view(o);
  }

  async recordTraffic(projectId: string, requests: number, errors: number, minutesAgo: number): Promise<number> {
    const whole = (n: number) => Number.isInteger(n) && n >= 0;
    if (!whole(requests) || requests > MAX_TRAFFIC_RECORD) throw invalidConfiguration('requests must be a whole number ≥ 0');
    if (!whole(errors) || errors > requests) throw invalidConfiguration('errors must be a whole number, at most requests');
    if (!whole(minutesAgo) || minutesAgo > 60 * 24 * 60) throw invalidConfiguration('minutes-ago must be 0 to 86400');
    await this.models.Traffic.create({
      _id: newId(),
      projectId,
      at: new Date(Date.now() - minutesAgo * 60_000),
      requests,
      errors,
    });
    return requests;
  }

  async analytics(projectId: string, range: unknown, now = Date.now()): Promise<AnalyticsView> {
    const from = rangeStart(normalizeRange(range), now);
    const samples = await this.models.Traffic.find({ projectId, at: { $gte: from } }, { at: 1, requests: 1, errors: 1 }).lean();
    return buildAnalytics(range, samples, now);
  }
}
