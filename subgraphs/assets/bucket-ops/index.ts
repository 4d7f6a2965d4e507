/**
 * Object-store bucket operations (decision 0029): buckets, storage, relocation, analytics, access logs, inventory, query, website.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { bucketOpsModule } from './module';
export type { BucketOpsServices } from './services';
