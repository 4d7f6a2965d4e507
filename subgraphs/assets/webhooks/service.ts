import { randomBytes } from 'node:crypto';
import { webhookHeaders } from '../../../core/delivery/engine';
import { type DeliveryAttempt, newDelivery } from '../../../core/delivery/record';
import { DeliveryWorker, type DueDelivery } from '../../../core/delivery/worker';
import { Webhook } from 'standardwebhooks';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { findPage } from '../../../core/keyset';
import type { Logger } from '../../../core/logger';
import { type UrlRefusals, checkUrlShape, postPinned, resolveTarget } from '../../../core/outbound-http';
import type { Principal } from '../../../core/principal';
import { decryptSecret, encryptSecret } from '../../../core/secrets';
import { ASSET_WEBHOOK_EVENT_TYPES, type AssetWebhookEmitter, type AssetWebhookEvent, stableId } from './events';
import type { DeliveryDoc, WebhookDoc, WebhookModels } from './model';
import { RESPONSE_EXCERPT_BYTES, type WebhookSettings } from './settings';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

/** Webhooks per account. */
export const WEBHOOKS_MAX = 25;
/** Deliveries per page: default 25, at most 50 (spec 8's push history page). */
export const DELIVERIES_PAGE_DEFAULT = 25;
export const DELIVERIES_PAGE_MAX = 50;
/** How long the fan-out remembers an account's webhooks, in ms (changes in this process forget at once). */
const HOOK_CACHE_MS = 1000;
const REFUSALS: UrlRefusals = { invalid: 'assets.invalid_webhook_url', unsafe: 'assets.unsafe_webhook_url' };

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;
const secretAad = (id: string) => `asset_webhooks:${id}:secret`;
const webhookNotFound = () => notFound('assets.webhook_not_found', 'webhook not found');
const deliveryNotFound = () => notFound('assets.delivery_not_found', 'webhook delivery not found');

export type WebhookView = Omit<WebhookDoc, 'secretSealed'>;
const view = ({ secretSealed: _s, ...w }: WebhookDoc): WebhookView => w;

/**
 * Asset webhooks (spec 4.3, 6.2) signed per Standard Webhooks. An event is fanned out into one
 * durable delivery record per subscribed webhook (its id derived from the event's, so a replayed
 * event makes none twice) before anything is sent; a worker claims due deliveries with a lease,
 * sends through the kernel's outbound rules (`core/outbound-http.ts`), keeps every attempt, and
 * retries with doubling backoff until the attempts run out: the kernel's delivery worker
 * (`core/delivery/worker.ts`); what is Assets' own is the event types, the body, the per-asset
 * order and where it stores. A process killed mid-send leaves a claim that lapses; the next worker
 * sends again with the same `webhook-id`.
 */
export class AssetWebhooks implements AssetWebhookEmitter {
  private readonly worker: DeliveryWorker<DeliveryDoc, WebhookDoc>;
  private readonly hookCache = new Map<string, { hooks: Pick<WebhookDoc, '_id' | 'eventTypes'>[]; until: number }>();

  constructor(
    readonly m: WebhookModels,
    private readonly assets: AssetsService,
    readonly settings: WebhookSettings,
    private readonly log: Logger,
  ) {
    this.worker = new DeliveryWorker<DeliveryDoc, WebhookDoc>({
      name: 'assets-webhook-deliveries',
      log,
      model: m.Delivery,
      schedule: {
        retryBaseMs: settings.ASSETS_WEBHOOK_RETRY_BASE_MS,
        retryMaxMs: settings.ASSETS_WEBHOOK_RETRY_MAX_MS,
        maxAttempts: settings.ASSETS_WEBHOOK_MAX_ATTEMPTS,
      },
      leaseMs: settings.ASSETS_WEBHOOK_LEASE_MS,
      pollMs: settings.ASSETS_WEBHOOK_POLL_MS,
      endpoint: (d) => this.m.Webhook.findById(d.webhookId).lean<WebhookDoc>().exec(),
      send: (hook, d) => this.send(hook, d),
      dueFields: ['orderKey', 'seq'],
      hold: (due, now) => this.inOrder(due, now),
      ended: (d) => this.releaseNext(d),
    });
  }

  // ---- endpoints ------------------------------------------------------------------------------

  async create(
    p: Principal | null,
    input: { url: string; eventTypes: string[]; description?: string | null },
  ): Promise<WebhookView & { secret: string }> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const url = checkUrlShape(input.url, this.settings.OUTBOUND_ALLOW_HOSTS, REFUSALS).toString();
    const unknown = input.eventTypes.filter((t) => !(ASSET_WEBHOOK_EVENT_TYPES as readonly string[]).includes(t));
    if (!input.eventTypes.length || unknown.length)
      throw badRequest('validation_failed', `event_types must be 1 or more of ${ASSET_WEBHOOK_EVENT_TYPES.join(', ')}`, {
        unknown_event_types: unknown,
      });
    if ((await this.m.Webhook.countDocuments({ accountId })) >= WEBHOOKS_MAX)
      throw new PlatformError('assets.webhook_limit', 409, `an account has at most ${WEBHOOKS_MAX} webhooks`);
    const secret = newSecret();
    const now = new Date();
    const _id = newId();
    const doc: WebhookDoc = {
      _id,
      accountId,
      url,
      eventTypes: [...new Set(input.eventTypes)],
      description: input.description ?? null,
      enabled: true,
      secretSealed: encryptSecret(secret, secretAad(_id)),
      createdAt: now,
      updatedAt: now,
    };
    await this.m.Webhook.create(doc);
    this.hookCache.delete(accountId);
    return { ...view(doc), secret };
  }

  async list(p: Principal | null): Promise<WebhookView[]> {
    const { accountId } = this.assets.reader(p);
    const docs = await this.m.Webhook.find({ accountId }, { secretSealed: 0 }).sort({ createdAt: 1 }).lean<WebhookDoc[]>().exec();
    return docs.map((d) => ({ ...d }));
  }

  private async own(accountId: string, id: string): Promise<WebhookDoc> {
    const doc = await this.m.Webhook.findById(id).lean<WebhookDoc>().exec();
    if (!doc || doc.accountId !== accountId) throw webhookNotFound();
    return doc;
  }

  /** Deletes the webhook and its delivery history (nothing is sent for it any more). */
  async remove(p: Principal | null, id: string): Promise<WebhookView> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const doc = await this.own(accountId, id);
    const res = await this.m.Webhook.deleteOne({ _id: id, accountId });
    if (res.deletedCount !== 1) throw webhookNotFound();
    await this.m.Delivery.deleteMany({ webhookId: id });
    this.hookCache.delete(accountId);
    return view(doc);
  }

  async deliveries(
    p: Principal | null,
    webhookId: string,
    q: { status?: string | null; limit?: number | null; cursor?: string | null },
  ): Promise<{ items: DeliveryDoc[]; nextCursor: string }> {
    const { accountId } = this.assets.reader(p);
    await this.own(accountId, webhookId);
    const limit = q.limit ?? DELIVERIES_PAGE_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > DELIVERIES_PAGE_MAX)
      throw badRequest('validation_failed', `limit is 1 to ${DELIVERIES_PAGE_MAX}`);
    const filter: Record<string, unknown> = { webhookId };
    if (q.status) {
      if (!['pending', 'succeeded', 'failed'].includes(q.status))
        throw badRequest('validation_failed', 'status is pending, succeeded or failed');
      filter.status = q.status;
    }
    const binding = `deliveries:${webhookId}:${q.status ?? ''}`;
    const page = await findPage<DeliveryDoc>(this.m.Delivery, filter, {
      field: 'createdAt',
      binding,
      position: { value: 't', id: 'id', form: 'iso' },
      limit,
      cursor: q.cursor,
      projection: { body: 0 },
    });
    return { items: page.items, nextCursor: page.nextCursor ?? '' };
  }

  /** Queues another attempt now, whatever the delivery's state (same event id, same body). */
  async retry(p: Principal | null, deliveryId: string): Promise<DeliveryDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const d = await this.worker.requeue({ _id: deliveryId, accountId }, { body: 0 });
    if (!d) throw deliveryNotFound();
    return d;
  }

  // ---- fan-out --------------------------------------------------------------------------------

  private async hooksOf(accountId: string): Promise<Pick<WebhookDoc, '_id' | 'eventTypes'>[]> {
    const now = Date.now();
    const hit = this.hookCache.get(accountId);
    if (hit && hit.until > now) return hit.hooks;
    const hooks = await this.m.Webhook.find({ accountId, enabled: true }, { _id: 1, eventTypes: 1 })
      .lean<Pick<WebhookDoc, '_id' | 'eventTypes'>[]>()
      .exec();
    if (this.hookCache.size > 10_000) this.hookCache.clear();
    this.hookCache.set(accountId, { hooks, until: now + HOOK_CACHE_MS });
    return hooks;
  }

  /** One delivery per subscribed webhook, each created once (a repeated event changes nothing). */
  async emit(event: AssetWebhookEvent): Promise<void> {
    const hooks = (await this.hooksOf(event.accountId)).filter((h) => h.eventTypes.includes(event.type));
    if (!hooks.length) return;
    const body = JSON.stringify({
      type: event.type,
      timestamp: event.occurredAt.toISOString(),
      data: { event_id: event.id, ...event.data },
    });
    const assetId = typeof event.data.asset_id === 'string' ? event.data.asset_id : null;
    const seq = event.occurredAt.getTime() * 16 + Math.max(0, Math.min(15, event.order ?? 0));
    let created = 0;
    for (const h of hooks) {
      const fields = { _id: stableId(`delivery:${event.id}:${h._id}`), accountId: event.accountId, webhookId: h._id };
      const delivery = newDelivery({ ...fields, eventId: event.id, eventType: event.type, body });
      if (await this.worker.createOnce({ ...delivery, orderKey: assetId ? `${h._id}:${assetId}` : null, seq })) created++;
    }
    if (created) this.nudge();
  }

  // ---- the delivery worker --------------------------------------------------------------------

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  nudge(): void {
    this.worker.nudge();
  }

  /**
   * Of the due deliveries, those to attempt now: a delivery about an asset waits while an earlier
   * one of the same asset and webhook is pending (queued, in flight or backing off): it is put off,
   * and the earlier one's end lets it go at once.
   */
  private async inOrder(due: DueDelivery<DeliveryDoc>[], now: Date): Promise<DueDelivery<DeliveryDoc>[]> {
    const ready: typeof due = [];
    for (const d of due) {
      if (!d.orderKey || d.seq === null || d.seq === undefined) {
        ready.push(d);
        continue;
      }
      const earlier = await this.m.Delivery.findOne(
        { orderKey: d.orderKey, status: 'pending', seq: { $lt: d.seq } },
        { nextAttemptAt: 1, leaseUntil: 1 },
      )
        .lean<Pick<DeliveryDoc, 'nextAttemptAt' | 'leaseUntil'>>()
        .exec();
      if (!earlier) {
        ready.push(d);
        continue;
      }
      // Put off until the earlier one could be done; its end releases this one sooner.
      const until = Math.max(
        now.getTime() + this.settings.ASSETS_WEBHOOK_LEASE_MS,
        earlier.leaseUntil ? new Date(earlier.leaseUntil).getTime() : 0,
        earlier.nextAttemptAt ? new Date(earlier.nextAttemptAt).getTime() : 0,
      );
      await this.m.Delivery.updateOne(
        { _id: d._id, status: 'pending', leaseUntil: d.leaseUntil ?? null },
        { $set: { nextAttemptAt: new Date(until), leaseUntil: null } },
      );
    }
    return ready;
  }

  /** A delivery ended (sent or given up): the next one of its asset and webhook, put off while waiting, is due now. */
  private async releaseNext(d: DeliveryDoc): Promise<void> {
    if (!d.orderKey || d.seq === null || d.seq === undefined) return;
    const next = await this.m.Delivery.findOne(
      { orderKey: d.orderKey, status: 'pending', seq: { $gt: d.seq } },
      { _id: 1, attempts: 1 },
    )
      .sort({ seq: 1 })
      .lean<Pick<DeliveryDoc, '_id' | 'attempts'>>()
      .exec();
    // One still waiting its first turn goes now; one backing off from its own attempt keeps its time.
    if (next && next.attempts.length === 0)
      await this.m.Delivery.updateOne(
        { _id: next._id, status: 'pending', leaseUntil: null },
        { $set: { nextAttemptAt: new Date() } },
      );
    this.nudge();
  }

  private async send(hook: WebhookDoc, d: DeliveryDoc): Promise<DeliveryAttempt> {
    const at = new Date();
    const started = performance.now();
    const result = (r: Omit<DeliveryAttempt, 'durationMs' | 'at'>): DeliveryAttempt => ({
      ...r,
      at,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      const secret = decryptSecret(hook.secretSealed, secretAad(hook._id));
      // `webhook-id` is the event id: the same on every retry, so receivers can deduplicate.
      const signature = new Webhook(secret).sign(d.eventId, at, d.body);
      const target = await resolveTarget(hook.url, this.settings.OUTBOUND_ALLOW_HOSTS, { refusals: REFUSALS });
      if (!target) return result({ statusCode: null, responseExcerpt: null, error: 'the host does not resolve' });
      const res = await postPinned(target, d.body, webhookHeaders(d.eventId, at, signature, 'platform-assets-webhooks/1'), {
        timeoutMs: this.settings.ASSETS_WEBHOOK_TIMEOUT_MS,
        maxExcerptBytes: RESPONSE_EXCERPT_BYTES,
      });
      return result({ statusCode: res.statusCode, responseExcerpt: res.excerpt, error: null });
    } catch (e) {
      return result({ statusCode: null, responseExcerpt: null, error: (e as Error).message });
    }
  }
}
