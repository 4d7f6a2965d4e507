import { defineModule } from '../../core/area-module';
import type { AreaContext } from '../../core/area';
import { parseDnsServers, SystemDnsResolver } from '../../core/dns/resolver';
import { startDnsStandIn } from '../../core/dns/stand-in-server';
import { AuditService } from './audit';
import { ChecklistService, checklistModel } from './checklist';
import { MigrationPlanner } from './migration';
import { MailPublicResolver } from './resolvers';
import { mailRoutes } from './routes';
import type { MailSettings } from './settings';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN } from './testing/audit-zones';

export interface PublicModuleServices {
  audit: AuditService;
  checklist: ChecklistService;
  migration: MigrationPlanner;
}

/** The public side of mail: the domain audit, migration guides and plans, and the migration checklist. */
export const publicModule = defineModule<PublicModuleServices>({
  name: 'public',
  services: (ctx: AreaContext<MailSettings>) => {
    const s = ctx.settings;
    const audit = new AuditService({
      // Stand-ins start before the settings are parsed, so an unset variable already holds the stand-in's address.
      resolver: new SystemDnsResolver(parseDnsServers(s.MAIL_DNS_SERVERS)),
      platformSpfDomain: s.MAIL_PLATFORM_SPF_DOMAIN ?? PLATFORM_SPF_DOMAIN,
    });
    return { audit, checklist: new ChecklistService(checklistModel(ctx.conn)), migration: new MigrationPlanner(audit) };
  },
  resolvers: [MailPublicResolver],
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
