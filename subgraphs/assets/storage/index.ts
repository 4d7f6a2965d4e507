/**
 * The Assets storage core (the `core` module): the service every module builds on, asset records guarded by revisions, versions and branches, delete jobs, the workers.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { coreModule, type CoreModuleServices } from './module';
export { type AssetsService, type ListFilter, SORT_FIELDS, type SortKey } from './service';
export {
  AssetJobType,
  AssetListType,
  BucketInputType,
  BucketType,
  jobStatusUrl,
  ReplicationPolicyInput,
  toAsset,
  toBucket,
  toJob,
} from './types';
