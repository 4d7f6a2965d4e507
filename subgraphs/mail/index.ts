import { z } from 'zod';
import { defineArea } from '../../core/area';
import { parseDnsServers, SystemDnsResolver } from '../../core/dns/resolver';
import { startDnsStandIn } from '../../core/dns/stand-in-server';
import { MailPublicResolver } from './resolvers';
import { mailRoutes } from './routes';
import { MailServices } from './services';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN } from './testing/audit-zones';

export { MailServices } from './services';

const settings = z.object({
  /** `host:port,…` of the resolvers the audit asks (CONTRACTS.md); unset: the DNS stand-in when it runs, else the system's. */
  MAIL_DNS_SERVERS: z.string().optional(),
  /** The domain customers `include:` in SPF to authorize the platform's senders (default `_spf.platform.test`, served by the stand-in). */
  MAIL_PLATFORM_SPF_DOMAIN: z.string().min(3).optional(),
  /** A JSON zone file for the DNS stand-in (default: the audit fixtures). */
  MAIL_DNS_ZONE_FILE: z.string().optional(),
});
export type MailSettings = z.infer<typeof settings>;

export default defineArea<MailServices, MailSettings>({
  name: 'mail',
  portOffset: 4,
  config: settings,
  services: (ctx) =>
    new MailServices({
      conn: ctx.conn,
      // Stand-ins start before the settings are parsed, so an unset variable already holds the stand-in's address.
      resolver: new SystemDnsResolver(parseDnsServers(ctx.settings.MAIL_DNS_SERVERS)),
      platformSpfDomain: ctx.settings.MAIL_PLATFORM_SPF_DOMAIN ?? PLATFORM_SPF_DOMAIN,
    }),
  subgraph: (services) => ({
    resolvers: [MailPublicResolver],
    createResolver: (cls) => new cls(services),
  }),
  routes: mailRoutes,
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
  ],
});
