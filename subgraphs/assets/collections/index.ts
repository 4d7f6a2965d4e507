/**
 * Collections and saved searches of assets.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { collectionsModule, type CollectionsModuleServices } from './module';
