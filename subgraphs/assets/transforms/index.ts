/**
 * Image transformations: definitions, derivatives, the compute limiter, their REST rows and resolver.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { AssetTransformsResolver } from './resolvers';
export { transformRoutes } from './routes';
export { decodeSpec, type DerivativeDoc, Transforms } from './transforms';
