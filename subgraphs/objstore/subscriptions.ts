import { z } from 'zod';
import { badRequest, conflict, notFound } from '../../core/errors';
import { OBJECT_EVENT_TYPES, type ObjectEvent, type ObjectEventType } from '../../core/events/object-events';
import { newId } from '../../core/ids';
import { type Principal, requireScope, requireWriter } from '../../core/principal';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { BucketDirectory } from './buckets';
import type { DeliveryMode, ObjstoreModels, SubscriptionDoc } from './model';
import { parseAllowHosts, resolveTarget } from '../../core/outbound-http';
import type { ObjstoreSettings } from './settings';
import { newSigningSecret } from './signing';

/** Longest literal prefix or suffix filter, in characters (object keys are at most 1,024). */
export const MAX_FILTER_LENGTH = 1024;
/** Subscriptions one bucket may hold. */
export const MAX_SUBSCRIPTIONS_PER_BUCKET = 100;

export const READ_SCOPE = 'assets:read';
export const WRITE_SCOPE = 'assets:write';

export interface CreateSubscriptionInput {
  deliveryMode?: string | null;
  url?: string | null;
  eventTypes?: string[] | null;
  prefix?: string | null;
  suffix?: string | null;
  enabled?: boolean | null;
}

export interface UpdateSubscriptionInput {
  enabled?: boolean | null;
  rotateSecret?: boolean | null;
  eventTypes?: string[] | null;
  prefix?: string | null;
  suffix?: string | null;
}

/** What callers see of a subscription; `signingSecret` only right after create or rotation. */
export interface SubscriptionView {
  id: string;
  bucketId: string;
  deliveryMode: DeliveryMode;
  url: string | null;
  eventTypes: string[];
  prefix: string | null;
  suffix: string | null;
  enabled: boolean;
  status: 'active' | 'paused';
  hasSigningSecret: boolean;
  signingSecret: string | null;
  secretRotatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export const subscriptionNotFound = () => notFound('subscription_not_found', 'event subscription not found');

export function subscriptionView(s: SubscriptionDoc, signingSecret: string | null = null): SubscriptionView {
  return {
    id: s._id,
    bucketId: s.bucketId,
    deliveryMode: s.deliveryMode,
    url: s.url,
    eventTypes: s.eventTypes,
    prefix: s.prefix,
    suffix: s.suffix,
    enabled: s.enabled,
    status: s.enabled ? 'active' : 'paused',
    hasSigningSecret: Boolean(s.secretCiphertext),
    signingSecret,
    secretRotatedAt: s.secretRotatedAt,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}

/** Whether an event passes a subscription's type and literal key filters. */
export function matches(
  s: Pick<SubscriptionDoc, 'eventTypes' | 'prefix' | 'suffix'>,
  e: Pick<ObjectEvent, 'type' | 'key'>,
): boolean {
  if (!s.eventTypes.includes(e.type)) return false;
  if (s.prefix && !e.key.startsWith(s.prefix)) return false;
  if (s.suffix && !e.key.endsWith(s.suffix)) return false;
  return true;
}

function eventTypes(given: string[] | null | undefined): ObjectEventType[] {
  if (given === undefined || given === null) return [...OBJECT_EVENT_TYPES];
  if (given.length === 0) throw badRequest('invalid_event_types', 'event_types must name at least one event type');
  const unknown = given.filter((t) => !(OBJECT_EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) {
    throw badRequest('invalid_event_types', `unknown event type ${unknown[0]}`, { supported: [...OBJECT_EVENT_TYPES] });
  }
  return [...new Set(given)] as ObjectEventType[];
}

function literal(name: 'prefix' | 'suffix', v: string | null | undefined): string | null {
  if (v === undefined || v === null || v === '') return null;
  if (v.length > MAX_FILTER_LENGTH) throw badRequest(`invalid_${name}`, `${name} is longer than ${MAX_FILTER_LENGTH} characters`);
  return v;
}

const modeSchema = z.enum(['pull', 'push']);

/** Subscriptions under `/api/v1/buckets/{bucketID}/event-subscriptions` (spec 2.5, 4.5). */

/** The record a sealed signing secret belongs to (its AAD). */
const secretAad = (subscriptionId: string) => `objstore_subscriptions:${subscriptionId}:secret`;

export class Subscriptions {
  private readonly allowHosts: Set<string>;

  constructor(
    private readonly models: ObjstoreModels,
    private readonly buckets: BucketDirectory,
    settings: ObjstoreSettings,
    /** Called after a change that may free waiting push deliveries (resume). */
    private readonly onResume: (subscriptionId: string) => Promise<void>,
    /** Called when a bucket gains or loses a subscription (the fan-out's cache). */
    private readonly onChanged: (bucketId: string) => void = () => undefined,
  ) {
    this.allowHosts = parseAllowHosts(settings.OUTBOUND_ALLOW_HOSTS);
  }

  /** The caller's subscription on the caller's bucket, or 404. */
  async load(principal: Principal, bucketId: string, subscriptionId: string): Promise<SubscriptionDoc> {
    await this.buckets.requireOwned(principal, bucketId);
    const s = await this.models.Subscription.findById(subscriptionId).lean();
    if (!s || s.bucketId !== bucketId || s.accountId !== principal.accountId) throw subscriptionNotFound();
    return s;
  }

  async create(principalIn: Principal | null, bucketId: string, input: CreateSubscriptionInput): Promise<SubscriptionView> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    await this.buckets.requireOwned(principal, bucketId);
    const mode = modeSchema.safeParse(input.deliveryMode ?? 'pull');
    if (!mode.success) throw badRequest('invalid_delivery_mode', 'delivery_mode must be pull or push');
    let url: string | null = null;
    if (mode.data === 'push') {
      if (!input.url) throw badRequest('push_url_required', 'a push subscription needs a url');
      // A host that does not resolve yet is accepted now and checked (and pinned) at each send.
      await resolveTarget(input.url, this.allowHosts, { lenient: true });
      url = input.url;
    } else if (input.url) {
      throw badRequest('url_not_allowed', 'url applies to push subscriptions only');
    }
    const count = await this.models.Subscription.countDocuments({ bucketId });
    if (count >= MAX_SUBSCRIPTIONS_PER_BUCKET) {
      throw conflict('subscription_limit_reached', `a bucket holds at most ${MAX_SUBSCRIPTIONS_PER_BUCKET} event subscriptions`);
    }
    const secret = mode.data === 'push' ? newSigningSecret() : null;
    const now = new Date();
    const _id = newId();
    const doc: SubscriptionDoc = {
      _id,
      accountId: principal.accountId,
      bucketId,
      deliveryMode: mode.data,
      url,
      eventTypes: eventTypes(input.eventTypes),
      prefix: literal('prefix', input.prefix),
      suffix: literal('suffix', input.suffix),
      enabled: input.enabled ?? true,
      secretCiphertext: secret ? encryptSecret(secret, secretAad(_id)) : null,
      secretRotatedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.models.Subscription.create(doc);
    this.onChanged(bucketId);
    return subscriptionView(doc, secret);
  }

  async list(principalIn: Principal | null, bucketId: string): Promise<SubscriptionView[]> {
    const principal = requireScope(principalIn, READ_SCOPE);
    await this.buckets.requireOwned(principal, bucketId);
    const subs = await this.models.Subscription.find({ bucketId, accountId: principal.accountId })
      .sort({ createdAt: 1, _id: 1 })
      .lean();
    return subs.map((s) => subscriptionView(s));
  }

  async get(principalIn: Principal | null, bucketId: string, id: string): Promise<SubscriptionView> {
    const principal = requireScope(principalIn, READ_SCOPE);
    return subscriptionView(await this.load(principal, bucketId, id));
  }

  /** `enabled` pauses or resumes; `rotate_secret: true` returns a replacement secret once. */
  async update(
    principalIn: Principal | null,
    bucketId: string,
    id: string,
    input: UpdateSubscriptionInput,
  ): Promise<SubscriptionView> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    const s = await this.load(principal, bucketId, id);
    const set: Partial<SubscriptionDoc> = { updatedAt: new Date() };
    if (input.enabled !== undefined && input.enabled !== null) set.enabled = input.enabled;
    if (input.eventTypes !== undefined && input.eventTypes !== null) set.eventTypes = eventTypes(input.eventTypes);
    if (input.prefix !== undefined) set.prefix = literal('prefix', input.prefix);
    if (input.suffix !== undefined) set.suffix = literal('suffix', input.suffix);
    let secret: string | null = null;
    if (input.rotateSecret) {
      if (s.deliveryMode !== 'push') throw badRequest('not_a_push_subscription', 'only push subscriptions have a signing secret');
      secret = newSigningSecret();
      set.secretCiphertext = encryptSecret(secret, secretAad(s._id));
      set.secretRotatedAt = new Date();
    }
    const updated = await this.models.Subscription.findOneAndUpdate({ _id: s._id }, { $set: set }, { new: true }).lean();
    if (!updated) throw subscriptionNotFound();
    if (!s.enabled && updated.enabled) await this.onResume(s._id);
    return subscriptionView(updated, secret);
  }

  /** Removes the subscription, its pending deliveries and its history; objects are untouched. */
  async remove(principalIn: Principal | null, bucketId: string, id: string): Promise<SubscriptionView> {
    const principal = requireScope(requireWriter(principalIn), WRITE_SCOPE);
    const s = await this.load(principal, bucketId, id);
    await this.models.Subscription.deleteOne({ _id: s._id });
    this.onChanged(bucketId);
    await this.models.Delivery.deleteMany({ subscriptionId: s._id });
    return subscriptionView(s);
  }

  /** The current signing secret of a push subscription (read at each send: rotation applies next send). */
  async signingSecret(subscriptionId: string): Promise<{ sub: SubscriptionDoc; secret: string } | null> {
    const sub = await this.models.Subscription.findById(subscriptionId).lean();
    if (!sub || !sub.secretCiphertext) return null;
    return { sub, secret: decryptSecret(sub.secretCiphertext, secretAad(sub._id)) };
  }
}
