import { z } from 'zod';

const ms = z
  .string()
  .regex(/^\d+$/)
  .optional()
  .transform((v) => (v === undefined ? undefined : Number(v)));

/** The mail area's settings (every module reads its own from them). */
export const mailSettingsSchema = z.object({
  /** `host:port,…` of the resolvers the audit asks (docs/contracts.md); unset: the DNS stand-in when it runs, else the system's. */
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
export type MailSettings = z.output<typeof mailSettingsSchema>;
