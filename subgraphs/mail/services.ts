import type { Connection } from 'mongoose';
import type { DnsResolver } from '../../core/dns/resolver';
import type { EventBus } from '../../core/events/event-bus';
import { OutboxRelay } from '../../core/events/outbox';
import type { Logger } from '../../core/logger';
import type { Ports } from '../../core/ports';
import { AuditService } from './audit';
import { ChecklistService, checklistModel } from './checklist';
import { GUIDES, type Guide, parseProvider, planFor, PROVIDERS } from './migration';
import { type SenderOptions, SendService } from './sender';
import { type SendingModels, sendingModels } from './sending-model';
import { type DeliveryOptions, WebhookService } from './webhooks';

export interface MailDeps {
  conn: Connection;
  resolver: DnsResolver;
  platformSpfDomain: string;
  ports: Ports;
  /** Physical name of `${prefix}.mail.events`. */
  eventsTopic: string;
  sender: SenderOptions;
  delivery: DeliveryOptions;
  log: Logger;
  /** Publishes pending outbox events; absent when only the SDL is built. */
  bus?: EventBus;
}

/** Everything the mail area's resolvers and workers call. */
export class MailServices {
  readonly audit: AuditService;
  readonly checklist: ChecklistService;
  readonly models: SendingModels;
  readonly sender: SendService;
  readonly webhooks: WebhookService;
  readonly eventsTopic: string;
  /** Publishes the mail outboxes: scans once a second when idle, at once after a write. */
  readonly relay: OutboxRelay | null;

  constructor(deps: MailDeps) {
    this.audit = new AuditService({ resolver: deps.resolver, platformSpfDomain: deps.platformSpfDomain });
    this.checklist = new ChecklistService(checklistModel(deps.conn));
    this.models = sendingModels(deps.conn);
    this.eventsTopic = deps.eventsTopic;
    const m = this.models;
    this.relay = deps.bus
      ? new OutboxRelay({ models: [m.Message, m.Suppression, m.Webhook, m.Delivery], bus: deps.bus, intervalMs: 1_000 })
      : null;
    const onEvents = () => this.relay?.nudge();
    this.sender = new SendService(this.models, deps.ports, deps.eventsTopic, deps.sender, deps.log, onEvents);
    this.webhooks = new WebhookService(this.models, deps.eventsTopic, deps.delivery, deps.log, onEvents);
  }

  guides(): Guide[] {
    return PROVIDERS.map((p) => GUIDES[p]);
  }

  /** The audit (same limits and cache) plus the provider's guide and steps; `invalid_provider` first. */
  async migrationPlan(input: { domain: unknown; provider: unknown; selectors?: unknown; clientIp: string }) {
    const provider = parseProvider(input.provider);
    const report = await this.audit.audit(input);
    return { ...report, ...planFor(provider, report.domain, report.spf.proposed) };
  }
}
