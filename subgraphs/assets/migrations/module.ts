import { defineModule } from '../../../core/area-module';
import { externalSettings } from '../external-settings';
import { MIGRATION_OPERATION, Migrations } from './migrations';
import { migrationModels } from './model';
import { migrationReportPlane } from './report-plane';
import { AssetMigrationsResolver } from './resolvers';
import { migrationRoutes } from './routes';
import type { ConnectionsModuleServices } from '../connections';
import type { CoreModuleServices } from '../storage';
import { bearerAuthenticate } from '../planes';

export interface MigrationsModuleServices {
  migrations: Migrations;
}

/** Migrations: a durable operation that imports a connection's objects, with a downloadable report. */
export const migrationsModule = defineModule<MigrationsModuleServices, CoreModuleServices & ConnectionsModuleServices>({
  name: 'migrations',
  services: (ctx, { assets, connections }) => ({
    migrations: new Migrations(
      migrationModels(ctx.conn),
      assets,
      connections,
      ctx.engine,
      () => externalSettings(ctx.config.env).ASSETS_MIGRATION_ITEM_DELAY_MS,
    ),
  }),
  resolvers: [AssetMigrationsResolver],
  routes: migrationRoutes,
  executors: (s) => ({ [MIGRATION_OPERATION]: (ctx) => s.migrations.run(ctx) }),
  http: {
    bridge: async (app, s) => {
      await app.register(async (scope) => migrationReportPlane(scope, s.migrations, bearerAuthenticate(s.ports)));
    },
  },
});
