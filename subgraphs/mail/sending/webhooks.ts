import { randomBytes } from 'node:crypto';
import { webhookHeaders } from '../../../core/delivery/engine';
import { type DeliveryAttempt, newDelivery } from '../../../core/delivery/record';
import { DeliveryWorker, type RecordedAttempt } from '../../../core/delivery/worker';
import { Webhook } from 'standardwebhooks';
import { badRequest, notFound } from '../../../core/errors';
import { findPage } from '../../../core/keyset';
import { outboxPush } from '../../../core/events/outbox';
import { newId } from '../../../core/ids';
import type { Logger } from '../../../core/logger';
import { type Principal, requirePrincipal, requireWriter } from '../../../core/principal';
import { decryptSecret, encryptSecret } from '../../../core/secrets';
import { mailEvent, MAIL_EVENT_TYPES, type MailEvent, type MailEventType } from '../events';
import { checkWebhookUrl, safePost } from './outbound';
import type { DeliveryDoc, EventDoc, SendingModels, WebhookDoc } from './model';

/**
 * Webhook endpoints, the event store and signed deliveries (spec 6.4, Standard Webhooks). The event
 * consumer records each event once (its id is the key) and creates one delivery per subscribed
 * endpoint (`${eventId}:${webhookId}`, so a redelivered event makes no second delivery). Deliveries
 * are claimed with a lease and retried with backoff, every attempt kept, by the kernel's delivery
 * worker (`core/delivery/worker.ts`); mail's own are the event types, the body, the signature
 * with a rotation's grace, and the delivery's events in its outbox.
 */
export const LIST_LIMIT_DEFAULT = 25;
export const LIST_LIMIT_MAX = 100;
/** Delivery retries: 30 s doubling to at most 1 h, eight attempts in all (configurable for tests). */
export interface DeliveryOptions {
  retryBaseMs: number;
  retryMaxMs: number;
  maxAttempts: number;
  leaseMs: number;
  pollMs: number;
  allowHosts: Set<string>;
}

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * After a rotation, deliveries are signed with the new secret and, for this long, with the old one
 * too: Standard Webhooks lets `webhook-signature` carry several space-separated `v1,…` entries and
 * a receiver accepts any that verifies, so one still holding the old secret keeps working while
 * it is updated (decision 0101).
 */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/** The `webhook-signature` value: the current secret's entry, then the previous one's during the grace. */
export function signatureHeader(
  hook: Pick<WebhookDoc, '_id' | 'secretSealed' | 'previousSecretSealed' | 'previousSecretUntil'>,
  eventId: string,
  at: Date,
  body: string,
): string {
  const entries = [new Webhook(decryptSecret(hook.secretSealed, secretAad(hook._id))).sign(eventId, at, body)];
  if (hook.previousSecretSealed && hook.previousSecretUntil && new Date(hook.previousSecretUntil).getTime() > at.getTime()) {
    const previous = decryptSecret(hook.previousSecretSealed, previousSecretAad(hook._id));
    entries.push(new Webhook(previous).sign(eventId, at, body));
  }
  return entries.join(' ');
}

export interface WebhookView {
  id: string;
  url: string;
  eventTypes: string[];
  description: string | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}
const view = (w: WebhookDoc): WebhookView => ({
  id: w._id,
  url: w.url,
  eventTypes: w.eventTypes,
  description: w.description,
  enabled: w.enabled,
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

export interface DeliveryView {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  status: string;
  attemptCount: number;
  nextAttemptAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  attempts: DeliveryDoc['attempts'];
}
const deliveryView = (d: DeliveryDoc): DeliveryView => ({
  id: d._id,
  webhookId: d.webhookId,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attemptCount: d.attempts.length,
  nextAttemptAt: d.nextAttemptAt,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
  attempts: d.attempts,
});

function checkEventTypes(types: string[]): string[] {
  const unknown = types.filter((t) => !(MAIL_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length)
    throw badRequest('invalid_event_types', `unknown event types: ${unknown.join(', ')}`, { unknownEventTypes: unknown });
  if (!types.length) throw badRequest('invalid_event_types', 'eventTypes needs at least one event type');
  return [...new Set(types)];
}

function limitOf(limit: number | null | undefined): number {
  if (limit === null || limit === undefined) return LIST_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX)
    throw badRequest('invalid_limit', `limit is 1 to ${LIST_LIMIT_MAX}`);
  return limit;
}

function dateOf(value: string | null | undefined, name: string): Date | null {
  if (!value) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw badRequest('invalid_time', `${name} is not an RFC 3339 time`);
  return d;
}

/** The record a sealed signing secret belongs to (its AAD). */
const secretAad = (webhookId: string) => `mail_webhooks:${webhookId}:secret`;
const previousSecretAad = (webhookId: string) => `mail_webhooks:${webhookId}:previous-secret`;

export class WebhookService {
  private readonly worker: DeliveryWorker<DeliveryDoc, WebhookDoc>;

  constructor(
    private readonly models: SendingModels,
    private readonly topic: string,
    private readonly opts: DeliveryOptions,
    private readonly log: Logger,
    /** Called after a write that queued events, so the outbox relay publishes at once. */
    private readonly onEvents: () => void = () => undefined,
  ) {
    this.worker = new DeliveryWorker<DeliveryDoc, WebhookDoc>({
      name: 'mail-webhook-deliveries',
      log,
      model: models.Delivery,
      schedule: opts,
      leaseMs: opts.leaseMs,
      pollMs: opts.pollMs,
      endpoint: (d) => this.models.Webhook.findById(d.webhookId).lean<WebhookDoc>().exec(),
      send: (hook, d) => this.send(hook, d),
      alsoPush: (d, r) => this.attemptEvent(d, r),
    });
  }

  // --- endpoints ------------------------------------------------------------------------------

  async create(principal: Principal | null, input: { url: string; eventTypes: string[]; description?: string | null }) {
    const p = requireWriter(principal);
    const url = checkWebhookUrl(input.url, this.opts.allowHosts);
    const eventTypes = checkEventTypes(input.eventTypes);
    const secret = newSecret();
    const now = new Date();
    const _id = newId();
    const evt = mailEvent(
      this.topic,
      {
        type: 'mail.webhook.created',
        accountId: p.accountId,
        resourceType: 'webhook',
        resourceId: _id,
        messageId: null,
        data: { url, eventTypes },
      },
      now,
    );
    const doc = await this.models.Webhook.create({
      _id,
      accountId: p.accountId,
      url,
      eventTypes,
      description: input.description ?? null,
      enabled: true,
      secretSealed: encryptSecret(secret, secretAad(_id)),
      outbox: outboxPush([evt], now).outbox.$each,
      createdAt: now,
      updatedAt: now,
    });
    this.onEvents();
    return { ...view(doc.toObject()), secret };
  }

  async list(principal: Principal | null): Promise<WebhookView[]> {
    const p = requirePrincipal(principal);
    const docs = await this.models.Webhook.find({ accountId: p.accountId }, { secretSealed: 0, outbox: 0 })
      .sort({ createdAt: 1 })
      .lean();
    return docs.map((d) => view(d as WebhookDoc));
  }

  private async own(p: Principal, webhookId: string): Promise<WebhookDoc> {
    const doc = await this.models.Webhook.findById(webhookId).lean();
    if (!doc || doc.accountId !== p.accountId) throw notFound('webhook_not_found', 'no such webhook');
    return doc;
  }

  async update(
    principal: Principal | null,
    webhookId: string,
    input: { url?: string | null; eventTypes?: string[] | null; enabled?: boolean | null },
  ) {
    const p = requireWriter(principal);
    const current = await this.own(p, webhookId);
    const set: Partial<WebhookDoc> = { updatedAt: new Date() };
    if (input.url) set.url = checkWebhookUrl(input.url, this.opts.allowHosts);
    if (input.eventTypes) set.eventTypes = checkEventTypes(input.eventTypes);
    if (input.enabled !== undefined && input.enabled !== null) set.enabled = input.enabled;
    const now = set.updatedAt as Date;
    const type: MailEventType = set.enabled === false && current.enabled ? 'mail.webhook.disabled' : 'mail.webhook.updated';
    const evt = mailEvent(
      this.topic,
      {
        type,
        accountId: p.accountId,
        resourceType: 'webhook',
        resourceId: webhookId,
        messageId: null,
        data: {
          url: set.url ?? current.url,
          eventTypes: set.eventTypes ?? current.eventTypes,
          enabled: set.enabled ?? current.enabled,
        },
      },
      now,
    );
    const doc = await this.models.Webhook.findOneAndUpdate(
      { _id: webhookId, accountId: p.accountId },
      { $set: set, $push: outboxPush([evt], now) },
      { new: true },
    ).lean();
    if (!doc) throw notFound('webhook_not_found', 'no such webhook');
    this.onEvents();
    return view(doc);
  }

  async rotate(principal: Principal | null, webhookId: string): Promise<{ secret: string }> {
    const p = requireWriter(principal);
    const secret = newSecret();
    // The new secret signs from now on; the one it replaces signs too for the grace period. The
    // update is conditional on the secret read, so of two rotations at once neither loses the
    // other's secret (the later one reads again).
    for (;;) {
      const current = await this.own(p, webhookId);
      const now = new Date();
      const previous = decryptSecret(current.secretSealed, secretAad(webhookId));
      const res = await this.models.Webhook.updateOne(
        { _id: webhookId, accountId: p.accountId, secretSealed: current.secretSealed },
        {
          $set: {
            secretSealed: encryptSecret(secret, secretAad(webhookId)),
            previousSecretSealed: encryptSecret(previous, previousSecretAad(webhookId)),
            previousSecretUntil: new Date(now.getTime() + ROTATION_GRACE_MS),
            updatedAt: now,
          },
        },
      );
      if (res.matchedCount === 1) return { secret };
    }
  }

  async remove(principal: Principal | null, webhookId: string): Promise<boolean> {
    const p = requireWriter(principal);
    const res = await this.models.Webhook.deleteOne({ _id: webhookId, accountId: p.accountId });
    if (res.deletedCount === 0) throw notFound('webhook_not_found', 'no such webhook');
    return true;
  }

  // --- events ---------------------------------------------------------------------------------

  /** The consumer: records the event once and fans it out to the endpoints subscribed to it. */
  async record(event: MailEvent & { eventId?: string }): Promise<void> {
    const id = event.eventId ?? event.id;
    const createdAt = new Date(event.createdAt);
    try {
      await this.models.Event.create({
        _id: id,
        accountId: event.accountId,
        type: event.type,
        resourceType: event.resourceType,
        resourceId: event.resourceId,
        messageId: event.messageId,
        createdAt,
        data: event.data ?? {},
      });
    } catch (e) {
      if ((e as { code?: number }).code !== 11000) throw e;
    }
    // A delivery's own events are not fanned out again about a delivery event: no endless chains.
    if (
      event.type.startsWith('mail.webhook.delivery.') &&
      String(event.data?.eventType ?? '').startsWith('mail.webhook.delivery.')
    )
      return;
    const hooks = await this.models.Webhook.find({ accountId: event.accountId, enabled: true }, { eventTypes: 1 }).lean();
    const { eventId: _relayId, ...fields } = event;
    const body = JSON.stringify({ type: event.type, timestamp: event.createdAt, data: { ...fields, id } });
    let created = 0;
    for (const h of hooks.filter((w) => w.eventTypes.includes(event.type))) {
      const fields = { _id: `${id}:${h._id}`, accountId: event.accountId, webhookId: h._id, eventId: id };
      if (await this.worker.createOnce({ ...newDelivery({ ...fields, eventType: event.type, body }), outbox: [] })) created++;
    }
    if (created) this.nudge();
  }

  async events(
    principal: Principal | null,
    q: {
      type?: string | null;
      resourceType?: string | null;
      resourceId?: string | null;
      messageId?: string | null;
      from?: string | null;
      to?: string | null;
      limit?: number | null;
      cursor?: string | null;
    },
  ): Promise<{ items: EventDoc[]; nextCursor: string | null }> {
    const p = requirePrincipal(principal);
    const limit = limitOf(q.limit);
    const filter: Record<string, unknown> = { accountId: p.accountId };
    if (q.type) filter.type = q.type;
    if (q.resourceType) filter.resourceType = q.resourceType;
    if (q.resourceId) filter.resourceId = q.resourceId;
    if (q.messageId) filter.messageId = q.messageId;
    const from = dateOf(q.from, 'from');
    const to = dateOf(q.to, 'to');
    if (from || to) filter.createdAt = { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) };
    const page = await findPage<EventDoc>(this.models.Event, filter, {
      field: 'createdAt',
      binding: `events:${p.accountId}`,
      limit,
      cursor: q.cursor,
    });
    return { items: page.items, nextCursor: page.nextCursor };
  }

  // --- deliveries -----------------------------------------------------------------------------

  async deliveries(
    principal: Principal | null,
    webhookId: string,
    q: { status?: string | null; limit?: number | null; cursor?: string | null },
  ) {
    const p = requirePrincipal(principal);
    await this.own(p, webhookId);
    const limit = limitOf(q.limit);
    const filter: Record<string, unknown> = { webhookId, accountId: p.accountId };
    if (q.status) {
      if (!['pending', 'succeeded', 'failed'].includes(q.status))
        throw badRequest('invalid_status', 'status is pending, succeeded or failed');
      filter.status = q.status;
    }
    const page = await findPage<DeliveryDoc>(this.models.Delivery, filter, {
      field: 'createdAt',
      binding: `deliveries:${webhookId}`,
      limit,
      cursor: q.cursor,
      projection: { body: 0, outbox: 0 },
    });
    return { items: page.items.map(deliveryView), nextCursor: page.nextCursor };
  }

  async delivery(principal: Principal | null, deliveryId: string): Promise<DeliveryView> {
    const p = requirePrincipal(principal);
    const d = await this.models.Delivery.findById(deliveryId, { body: 0, outbox: 0 }).lean();
    if (!d || d.accountId !== p.accountId) throw notFound('delivery_not_found', 'no such webhook delivery');
    return deliveryView(d as DeliveryDoc);
  }

  /** Queues another attempt now, whatever the delivery's state (the same `webhook-id` and body). */
  async retry(principal: Principal | null, deliveryId: string): Promise<DeliveryView> {
    const p = requireWriter(principal);
    const d = await this.worker.requeue({ _id: deliveryId, accountId: p.accountId }, { body: 0, outbox: 0 });
    if (!d) throw notFound('delivery_not_found', 'no such webhook delivery');
    return deliveryView(d);
  }

  // --- the delivery worker --------------------------------------------------------------------

  start(): void {
    this.worker.start();
  }

  async stop(): Promise<void> {
    await this.worker.stop();
  }

  nudge(): void {
    this.worker.nudge();
  }

  /** Signs (with the previous secret too during a rotation's grace) and posts one attempt. */
  private async send(hook: WebhookDoc, d: DeliveryDoc): Promise<DeliveryAttempt> {
    const at = new Date();
    // `webhook-id` is the event id: the same on every retry, so receivers can deduplicate.
    const signature = signatureHeader(hook, d.eventId, at, d.body);
    const headers = webhookHeaders(d.eventId, at, signature, 'platform-mail-webhooks/1');
    const result = await safePost(hook.url, d.body, headers, this.opts.allowHosts);
    return { ...result, at: new Date() };
  }

  /** The delivery's own event, written with the record of its attempt (the relay publishes it). */
  private attemptEvent(d: DeliveryDoc, r: RecordedAttempt): Record<string, unknown> {
    const evt = mailEvent(
      this.topic,
      {
        type: r.ok ? 'mail.webhook.delivery.succeeded' : 'mail.webhook.delivery.failed',
        accountId: d.accountId,
        resourceType: 'webhook_delivery',
        resourceId: d._id,
        messageId: null,
        data: {
          webhookId: d.webhookId,
          eventId: d.eventId,
          eventType: d.eventType,
          attempt: r.count,
          statusCode: r.attempt.statusCode,
          final: r.status !== 'pending',
        },
      },
      r.done,
    );
    return outboxPush([evt], r.done);
  }
}
