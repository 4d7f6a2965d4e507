import { defineModule } from '../../../core/area-module';
import { SystemDnsResolver } from '../../../core/dns/resolver';
import { startDnsStandIn } from '../../../core/dns/stand-in-server';
import { externalSettings } from '../external-settings';
import { domainsCdnPlane } from './cdn';
import { Domains } from './domains';
import { domainModel } from './model';
import { AssetDomainsResolver } from './resolvers';
import { domainRoutes } from './routes';
import type { CoreModuleServices } from '../storage';

export interface DomainsModuleServices {
  domains: Domains;
}

/** Custom delivery domains, proven by a DNS TXT record. */
export const domainsModule = defineModule<DomainsModuleServices, CoreModuleServices>({
  name: 'domains',
  // The DNS servers are read at call time: the stand-ins fill in their addresses before the areas are built, tests after.
  services: (ctx, { assets }) => ({
    domains: new Domains(domainModel(ctx.conn), assets, () => new SystemDnsResolver(externalSettings(ctx.config.env).dnsServers)),
  }),
  resolvers: [AssetDomainsResolver],
  routes: domainRoutes,
  http: {
    cdn: async (app, s) => {
      await app.register(async (scope) => domainsCdnPlane(scope, s.assets, s.domains));
    },
  },
  /** The DNS that custom-domain TXT checks ask, when ASSETS_DNS_SERVERS is unset (zones from ASSETS_DNS_ZONE_FILE). */
  standIns: [
    {
      name: 'assets-dns',
      env: 'ASSETS_DNS_SERVERS',
      async start({ host, config }) {
        const file = config.env.ASSETS_DNS_ZONE_FILE;
        const server = await startDnsStandIn({ host, ...(file ? { zoneFile: file } : { zones: {} }) });
        return { value: server.address, stop: () => server.stop() };
      },
    },
  ],
});
