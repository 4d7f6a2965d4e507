/**
 * Migrations: a durable operation that imports a connection's objects, with a downloadable report.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { migrationsModule, type MigrationsModuleServices } from './module';
export type { Migrations } from './migrations';
export type { MigrationDoc } from './model';
export { MigrationType } from './types';
