import { defineModule } from '../../../core/area-module';
import type { AreaContext } from '../../../core/area';
import { RETRY_BASE_MS, RETRY_MAX_MS } from '../../../core/delivery/engine';
import { OutboxRelay } from '../../../core/events/outbox';
import { EVENTS_TOPIC, type MailEvent } from '../events';
import type { MailSettings } from '../settings';
import { startSmtpSink } from '../smtp-sink';
import { type SendingModels, sendingModels } from './model';
import { allowHosts } from './outbound';
import { MailSendingResolver } from './resolvers';
import { sendingRoutes } from './routes';
import { SendService } from './sender';
import { WebhookService } from './webhooks';

export interface SendingModuleServices {
  models: SendingModels;
  /** Physical name of `${prefix}.mail.events`. */
  eventsTopic: string;
  /** Publishes the mail outboxes: scans once a second when idle, at once after a write; absent when only the SDL is built. */
  relay: OutboxRelay | null;
  sender: SendService;
  webhooks: WebhookService;
}

/** Sending: messages to SMTP, the event store, and signed webhook deliveries (the kernel's delivery worker). */
export const sendingModule = defineModule<SendingModuleServices>({
  name: 'sending',
  services: (ctx: AreaContext<MailSettings>) => {
    const s = ctx.settings;
    const models = sendingModels(ctx.conn);
    const eventsTopic = ctx.topic(EVENTS_TOPIC);
    const relay = ctx.bus
      ? new OutboxRelay({
          models: [models.Message, models.Suppression, models.Webhook, models.Delivery],
          bus: ctx.bus,
          intervalMs: 1_000,
        })
      : null;
    const onEvents = () => relay?.nudge();
    const sender = new SendService(
      models,
      ctx.ports,
      eventsTopic,
      {
        smtpUrl: s.MAIL_SMTP_URL ?? 'smtp://127.0.0.1:25',
        retryBaseMs: s.MAIL_SEND_RETRY_BASE_MS ?? RETRY_BASE_MS,
        retryMaxMs: RETRY_MAX_MS,
        maxAttempts: 8,
        leaseMs: 60_000,
        pollMs: 1_000,
      },
      ctx.log,
      onEvents,
    );
    const webhooks = new WebhookService(
      models,
      eventsTopic,
      {
        retryBaseMs: s.MAIL_WEBHOOK_RETRY_BASE_MS ?? RETRY_BASE_MS,
        retryMaxMs: RETRY_MAX_MS,
        maxAttempts: 8,
        leaseMs: 30_000,
        pollMs: 1_000,
        allowHosts: allowHosts(s.OUTBOUND_ALLOW_HOSTS),
      },
      ctx.log,
      onEvents,
    );
    return { models, eventsTopic, relay, sender, webhooks };
  },
  resolvers: [MailSendingResolver],
  routes: sendingRoutes,
  consumers: (s) => [
    {
      name: 'event-store',
      topics: [s.eventsTopic],
      fromBeginning: true,
      handler: (m) => s.webhooks.record(m.value as MailEvent & { eventId?: string }),
    },
  ],
  workers: (s, ctx) => [
    {
      name: 'mail-outbox',
      start: async () => {
        await ctx.bus.ensureTopics([s.eventsTopic]);
        s.relay?.start();
      },
      stop: async () => s.relay?.stop(),
    },
    { name: 'mail-sender', start: () => s.sender.start(), stop: () => s.sender.stop() },
    { name: 'mail-webhook-deliveries', start: () => s.webhooks.start(), stop: () => s.webhooks.stop() },
  ],
  standIns: [
    {
      name: 'smtp-sink',
      env: 'MAIL_SMTP_URL',
      async start({ host }) {
        const sink = await startSmtpSink({ host });
        return { value: sink.url, stop: () => sink.stop() };
      },
    },
  ],
});
