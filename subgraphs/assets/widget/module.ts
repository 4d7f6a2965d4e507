import { defineModule } from '../../../core/area-module';
import { widgetPlane } from './widget-plane';
import type { CoreModuleServices } from '../storage';

/** The browser-upload widget (its script and page on the bridge listener). */
export const widgetModule = defineModule<object, object, CoreModuleServices>({
  name: 'widget',
  http: {
    bridge: async (app, s) => {
      await app.register(async (scope) => widgetPlane(scope, s.assets));
    },
  },
});
