import { newId } from '../../core/ids';

/**
 * Mail topics and event types (spec 6.4). Every state change of a message, suppression, webhook
 * or delivery writes its event into the changed document's outbox; the relay publishes it on
 * `${prefix}.mail.events`; the event store consumes it (the `GET /v1/mail/events` list) and fans it
 * out to subscribed webhooks.
 */
export const EVENTS_TOPIC = 'events';

export const MAIL_EVENT_TYPES = [
  'mail.message.accepted',
  'mail.message.queued',
  'mail.message.sending',
  'mail.message.mta_accepted',
  'mail.delivery.delayed',
  'mail.delivery.delivered',
  'mail.message.bounced',
  'mail.message.failed',
  'mail.message.suppressed',
  'mail.message.complained',
  'mail.suppression.created',
  'mail.suppression.deleted',
  'mail.otp.created',
  'mail.otp.sent',
  'mail.otp.verified',
  'mail.otp.failed_attempt',
  'mail.otp.failed',
  'mail.otp.expired',
  'mail.otp.canceled',
  'mail.template.created',
  'mail.template.updated',
  'mail.template.deleted',
  'mail.template.version.created',
  'mail.template.test_queued',
  'mail.domain.created',
  'mail.domain.verified',
  'mail.domain.failed',
  'mail.domain.deleted',
  'mail.webhook.created',
  'mail.webhook.updated',
  'mail.webhook.disabled',
  'mail.webhook.delivery.succeeded',
  'mail.webhook.delivery.failed',
  'mail.scheduled.created',
  'mail.scheduled.canceled',
  'mail.scheduled.dispatched',
  'mail.scheduled.failed',
  'mail.batch.created',
  'mail.batch.completed',
  'mail.batch.failed',
  'mail.audience.created',
  'mail.audience.members.imported',
  'mail.campaign.created',
  'mail.campaign.queued',
  'mail.inbound.domain.created',
  'mail.inbound.domain.verified',
  'mail.inbound.domain.routing_paused',
  'mail.inbound.received',
  'mail.inbound.quarantined',
  'mail.inbound.failed',
  'mail.message.replied',
] as const;
export type MailEventType = (typeof MAIL_EVENT_TYPES)[number];

/** The payload on the topic (the relay adds `eventId`). */
export interface MailEvent {
  id: string;
  type: MailEventType;
  accountId: string;
  resourceType: 'message' | 'suppression' | 'webhook' | 'webhook_delivery';
  resourceId: string;
  messageId: string | null;
  createdAt: string;
  data: Record<string, unknown>;
}

export function mailEvent(
  topic: string,
  e: Omit<MailEvent, 'id' | 'createdAt'>,
  at: Date = new Date(),
): { topic: string; key: string; payload: MailEvent } {
  return { topic, key: e.accountId, payload: { ...e, id: newId(), createdAt: at.toISOString() } };
}
