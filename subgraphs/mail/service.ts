/** Everything the mail area's resolvers and workers call: the services of its modules (`modules.ts`). */
export type { MailServices } from './modules';
