import type { z } from 'zod';
import { defineArea } from '../../core/area';
import { composeModules } from '../../core/area-module';
import { assetsByteRoutes } from './byte-routes';
import { ASSETS_MODULES, type AssetsServices } from './modules';
import { uploadFieldsSchema } from './uploads';
import { type AssetsSettings, assetsSettingsSchema } from './settings';

export type { AssetsService } from './storage';
export type { AssetsServices } from './modules';

/** Assets: one area made of the modules listed in `modules.ts` (docs/decisions/0180-assets-modules.md). */
export default defineArea<AssetsServices, AssetsSettings>({
  name: 'assets',
  portOffset: 2,
  // The kernel's ZodType<C> wants input = output; these settings are strings in, numbers out.
  config: assetsSettingsSchema as unknown as z.ZodType<AssetsSettings>,
  ...composeModules<AssetsServices>(ASSETS_MODULES, 'assets'),
  // What the modules' data planes serve on the bridge, described in one file of the area.
  byteRoutes: assetsByteRoutes(uploadFieldsSchema),
});
