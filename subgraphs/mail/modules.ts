// The order of these imports is the order of the types in schema/mail.graphql (type-graphql
// registers a type when its file is first read): a new module goes last.
import { publicModule, type PublicModuleServices } from './module';
import { sendingModule, type SendingModuleServices } from './sending/module';

/**
 * Every module of mail, in order (docs/decisions/0180-assets-modules.md, as Assets'): a module's
 * services are built after those of the modules above it, which it receives; its routes and
 * resolvers are listed in this order. Adding a module is its folder with a `module.ts` plus one
 * line here (and its services' type below).
 */
export const MAIL_MODULES = [publicModule, sendingModule] as const;

/** All the services of the area: what every module's hooks receive. */
export type MailServices = PublicModuleServices & SendingModuleServices;
