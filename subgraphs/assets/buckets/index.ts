/**
 * Buckets of assets: their settings and replica regions, and the REST rows and body that create and change them.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { type BucketInput, Buckets } from './buckets';
export { bucketBody } from './body';
export { bucketRoutes } from './routes';
