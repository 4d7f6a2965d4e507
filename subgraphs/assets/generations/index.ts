/**
 * Generated images (an AI job), idempotent by key.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { generationsModule, type GenerationsModuleServices } from './module';
