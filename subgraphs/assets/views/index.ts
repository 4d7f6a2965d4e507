/**
 * The usage views (analytics, summary) and the audit stream.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { viewsModule, type ViewsModuleServices } from './module';
