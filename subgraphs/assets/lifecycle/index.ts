/**
 * Lifecycle rules: a worker applies each due rule to the assets it selects.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { lifecycleModule, type LifecycleModuleServices } from './module';
