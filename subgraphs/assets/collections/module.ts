import { defineModule } from '../../../core/area-module';
import { organisationModels } from './model';
import { AssetOrganisationResolver } from './resolvers';
import { collectionRoutes } from './routes';
import { Organisation } from './service';
import type { CoreModuleServices } from '../storage';

export interface CollectionsModuleServices {
  /** Collections and saved searches. */
  organisation: Organisation;
}

export const collectionsModule = defineModule<CollectionsModuleServices, CoreModuleServices>({
  name: 'collections',
  services: (ctx, { assets }) => ({ organisation: new Organisation(organisationModels(ctx.conn), assets) }),
  resolvers: [AssetOrganisationResolver],
  routes: collectionRoutes,
});
