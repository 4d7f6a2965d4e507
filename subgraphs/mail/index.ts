import type { z } from 'zod';
import { defineArea } from '../../core/area';
import { composeModules } from '../../core/area-module';
import { MAIL_MODULES, type MailServices } from './modules';
import { type MailSettings, mailSettingsSchema } from './settings';

export type { MailServices } from './modules';

/** Mail: one area made of the modules listed in `modules.ts` (docs/decisions/0180-assets-modules.md). */
export default defineArea<MailServices, MailSettings>({
  name: 'mail',
  portOffset: 4,
  config: mailSettingsSchema as unknown as z.ZodType<MailSettings>,
  ...composeModules<MailServices>(MAIL_MODULES, 'audit'),
});
