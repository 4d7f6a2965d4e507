import { defineModule } from '../../../core/area-module';
import { externalSettings } from '../external-settings';
import { Connections } from './connections';
import { connectionModel } from './model';
import { AssetConnectionsResolver } from './resolvers';
import { connectionRoutes } from './routes';
import type { CoreModuleServices } from '../storage';

export interface ConnectionsModuleServices {
  connections: Connections;
}

/** Connections to outside sources (HTTP, S3), which migrations import from. */
export const connectionsModule = defineModule<ConnectionsModuleServices, CoreModuleServices>({
  name: 'connections',
  services: (ctx, { assets }) => ({
    // Read at call time: the stand-ins fill in their addresses before the areas are built, tests after.
    connections: new Connections(connectionModel(ctx.conn), assets, () => {
      const settings = externalSettings(ctx.config.env);
      return { allowHosts: settings.allowHosts, timeoutMs: settings.ASSETS_CONNECTION_TIMEOUT_MS };
    }),
  }),
  resolvers: [AssetConnectionsResolver],
  routes: connectionRoutes,
});
