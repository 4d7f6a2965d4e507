/**
 * Legacy video outputs, made by a durable operation and delivered on the CDN.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { videoModule, type VideoModuleServices } from './module';
