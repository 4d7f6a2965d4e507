import type { FastifyInstance } from 'fastify';
import type { AreaContext, StandInDefinition } from '../../core/area';
import { SystemDnsResolver } from '../../core/dns/resolver';
import { startDnsStandIn } from '../../core/dns/stand-in-server';
import type { OperationExecutor } from '../../core/operations/engine';
import type { AnyRoute } from '../../core/rest-route';
import { Connections } from './connections/connections';
import { connectionModel } from './connections/model';
import { AssetConnectionsResolver } from './connections/resolvers';
import { connectionRoutes } from './connections/routes';
import { domainsCdnPlane } from './domains/cdn';
import { Domains } from './domains/domains';
import { domainModel } from './domains/model';
import { AssetDomainsResolver } from './domains/resolvers';
import { domainRoutes } from './domains/routes';
import { externalSettings } from './external-settings';
import { MIGRATION_OPERATION, Migrations } from './migrations/migrations';
import { migrationModels } from './migrations/model';
import { migrationReportPlane } from './migrations/report-plane';
import { AssetMigrationsResolver } from './migrations/resolvers';
import { migrationRoutes } from './migrations/routes';
import type { AssetsService } from './service';
import type { Authenticate } from './upload-plane';
import { widgetPlane } from './widget/widget-plane';

/**
 * The parts of Assets that reach outside the platform (issue 17 items 4, 5, 9): custom domains,
 * connections and migrations, and the browser-upload widget. index.ts wires them in with one line
 * per hook of the area contract.
 */
export interface ExternalServices {
  domains: Domains;
  connections: Connections;
  migrations: Migrations;
}

export function externalServices(ctx: AreaContext<unknown>, assets: AssetsService): ExternalServices {
  // Read at call time: the stand-ins fill in their addresses before the areas are built, tests after.
  const settings = () => externalSettings(ctx.config.env);
  const domains = new Domains(domainModel(ctx.conn), assets, () => new SystemDnsResolver(settings().dnsServers));
  const connections = new Connections(connectionModel(ctx.conn), assets, () => ({
    allowHosts: settings().allowHosts,
    timeoutMs: settings().ASSETS_CONNECTION_TIMEOUT_MS,
  }));
  const migrations = new Migrations(
    migrationModels(ctx.conn),
    assets,
    connections,
    ctx.engine,
    () => settings().ASSETS_MIGRATION_ITEM_DELAY_MS,
  );
  return { domains, connections, migrations };
}

export const externalResolvers = [AssetDomainsResolver, AssetConnectionsResolver, AssetMigrationsResolver];

export const externalRoutes: AnyRoute[] = [...domainRoutes, ...connectionRoutes, ...migrationRoutes];

export const externalExecutors = (s: ExternalServices): Record<string, OperationExecutor> => ({
  [MIGRATION_OPERATION]: (ctx) => s.migrations.run(ctx),
});

export async function externalBridge(
  app: FastifyInstance,
  assets: AssetsService,
  s: ExternalServices,
  authenticate: Authenticate,
): Promise<void> {
  await app.register(async (scope) => widgetPlane(scope, assets));
  await app.register(async (scope) => migrationReportPlane(scope, s.migrations, authenticate));
}

export async function externalCdn(app: FastifyInstance, assets: AssetsService, s: ExternalServices): Promise<void> {
  await app.register(async (scope) => domainsCdnPlane(scope, assets, s.domains));
}

/** The DNS that custom-domain TXT checks ask, when ASSETS_DNS_SERVERS is unset (zones from ASSETS_DNS_ZONE_FILE). */
export const externalStandIns: StandInDefinition[] = [
  {
    name: 'assets-dns',
    env: 'ASSETS_DNS_SERVERS',
    async start({ host, config }) {
      const file = config.env.ASSETS_DNS_ZONE_FILE;
      const server = await startDnsStandIn({ host, ...(file ? { zoneFile: file } : { zones: {} }) });
      return { value: server.address, stop: () => server.stop() };
    },
  },
];
