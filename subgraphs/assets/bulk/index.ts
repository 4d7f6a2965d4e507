/**
 * Bulk jobs: one durable operation applies revisioned items; item events go to the webhooks.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { bulkModule, type BulkModuleServices } from './module';
export type { BulkJobDoc } from './model';
export { resultsQuery } from './routes';
export type { BulkJobs } from './service';
export { BulkJobType, toBulkJobPage } from './types';
