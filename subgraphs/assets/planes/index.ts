/**
 * What every byte route of the area shares: the caller from its bearer key, error answers, the prefix, access notes for the access log.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { accessNoteOf, noteAccess, noteAccessKey } from './access-notes';
export { ASSETS_PREFIX, type Authenticate, bearerAuthenticate, sendError } from './http';
