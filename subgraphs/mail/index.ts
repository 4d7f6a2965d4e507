import { z } from 'zod';
import { defineArea } from '../../core/area';
import { parseDnsServers, SystemDnsResolver, type DnsResolver } from '../../core/dns/resolver';
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

/**
 * The resolver is built on first use, reading `MAIL_DNS_SERVERS` then: a stand-in started after the
 * settings were parsed still puts its address in the environment before any audit runs.
 */
function lazyResolver(configured: string | undefined): DnsResolver {
  let real: DnsResolver | null = null;
  const get = () => (real ??= new SystemDnsResolver(parseDnsServers(process.env.MAIL_DNS_SERVERS ?? configured)));
  return {
    txt: (n, o) => get().txt(n, o),
    mx: (n, o) => get().mx(n, o),
    address: (n, t, o) => get().address(n, t, o),
  };
}

export default defineArea<MailServices, MailSettings>({
  name: 'mail',
  portOffset: 4,
  config: settings,
  services: (ctx) =>
    new MailServices({
      conn: ctx.conn,
      resolver: lazyResolver(ctx.settings.MAIL_DNS_SERVERS),
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
