/**
 * Connections to outside sources (HTTP, S3), which migrations import from.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { connectionsModule, type ConnectionsModuleServices } from './module';
export type { Connections } from './connections';
export type { MigrationSource, SourceObject } from './sources';
