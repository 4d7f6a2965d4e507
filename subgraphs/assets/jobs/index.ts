/**
 * The one job route across kinds (delete, bulk, AI, migration, workflow run).
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { jobsModule } from './module';
