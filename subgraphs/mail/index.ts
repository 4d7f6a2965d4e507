import { z } from 'zod';
import { defineArea } from '../../core/area';
import { parseDnsServers, SystemDnsResolver } from '../../core/dns/resolver';
import { startDnsStandIn } from '../../core/dns/stand-in-server';
import { EVENTS_TOPIC, type MailEvent } from './events';
import { allowHosts } from './outbound';
import { MailPublicResolver } from './resolvers';
import { mailRoutes } from './routes';
import { sendingRoutes } from './sending-routes';
import { MailSendingResolver } from './sending-resolvers';
import { MailServices } from './services';
import { startSmtpSink } from './smtp-sink';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN } from './testing/audit-zones';

export { MailServices } from './services';

const ms = z
  .string()
  .regex(/^\d+$/)
  .optional()
  .transform((v) => (v === undefined ? undefined : Number(v)));

const settings = z.object({
  /** `host:port,…` of the resolvers the audit asks (CONTRACTS.md); unset: the DNS stand-in when it runs, else the system's. */
  MAIL_DNS_SERVERS: z.string().optional(),
  /** The domain customers `include:` in SPF (default `_spf.platform.test`, served by the stand-in). */
  MAIL_PLATFORM_SPF_DOMAIN: z.string().min(3).optional(),
  /** A JSON zone file for the DNS stand-in (default: the audit fixtures). */
  MAIL_DNS_ZONE_FILE: z.string().optional(),
  /** `smtp://…` or `smtps://user:pass@host:port` of the relay; unset: the SMTP sink stand-in. */
  MAIL_SMTP_URL: z.string().optional(),
  /** First SMTP retry after a 4xx, in ms (default 30 s, doubling, at most 1 h). */
  MAIL_SEND_RETRY_BASE_MS: ms,
  /** First webhook redelivery, in ms (default 30 s, doubling, at most 1 h). */
  MAIL_WEBHOOK_RETRY_BASE_MS: ms,
  /** Hosts outbound webhooks may reach over plain HTTP and private addresses (tests only). */
  OUTBOUND_ALLOW_HOSTS: z.string().optional(),
});
export type MailSettings = z.output<typeof settings>;

const HOUR = 3_600_000;

export default defineArea<MailServices, MailSettings>({
  name: 'mail',
  portOffset: 4,
  config: settings as unknown as z.ZodType<MailSettings>,
  services: (ctx) => {
    const s = ctx.settings;
    return new MailServices({
      conn: ctx.conn,
      // Stand-ins start before the settings are parsed, so an unset variable already holds the stand-in's address.
      resolver: new SystemDnsResolver(parseDnsServers(s.MAIL_DNS_SERVERS)),
      platformSpfDomain: s.MAIL_PLATFORM_SPF_DOMAIN ?? PLATFORM_SPF_DOMAIN,
      ports: ctx.ports,
      eventsTopic: ctx.topic(EVENTS_TOPIC),
      sender: {
        smtpUrl: s.MAIL_SMTP_URL ?? 'smtp://127.0.0.1:25',
        retryBaseMs: s.MAIL_SEND_RETRY_BASE_MS ?? 30_000,
        retryMaxMs: HOUR,
        maxAttempts: 8,
        leaseMs: 60_000,
        pollMs: 1_000,
      },
      delivery: {
        retryBaseMs: s.MAIL_WEBHOOK_RETRY_BASE_MS ?? 30_000,
        retryMaxMs: HOUR,
        maxAttempts: 8,
        leaseMs: 30_000,
        pollMs: 1_000,
        allowHosts: allowHosts(s.OUTBOUND_ALLOW_HOSTS),
      },
      log: ctx.log,
      bus: ctx.bus,
    });
  },
  subgraph: (services) => ({
    resolvers: [MailPublicResolver, MailSendingResolver],
    createResolver: (cls) => new cls(services),
  }),
  routes: [...mailRoutes, ...sendingRoutes],
  consumers: (services) => [
    {
      name: 'event-store',
      topics: [services.eventsTopic],
      fromBeginning: true,
      handler: (m) => services.webhooks.record(m.value as MailEvent & { eventId?: string }),
    },
  ],
  workers: (services, ctx) => {
    const relay = services.relay;
    return [
      {
        name: 'mail-outbox',
        start: async () => {
          await ctx.bus.ensureTopics([services.eventsTopic]);
          relay?.start();
        },
        stop: async () => relay?.stop(),
      },
      { name: 'mail-sender', start: () => services.sender.start(), stop: () => services.sender.stop() },
      { name: 'mail-webhook-deliveries', start: () => services.webhooks.start(), stop: () => services.webhooks.stop() },
    ];
  },
  standIns: [
    {
      name: 'dns',
      env: 'MAIL_DNS_SERVERS',
      async start({ host }) {
        const file = process.env.MAIL_DNS_ZONE_FILE;
        const server = await startDnsStandIn({ host, ...(file ? { zoneFile: file } : { zones: AUDIT_ZONES }) });
        return { value: server.address, stop: () => server.stop() };
      },
    },
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
