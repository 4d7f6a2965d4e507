/**
 * The asset record: its stored shape (models), field rules, REST view, object events and record changes, key scopes, the REST rows' shared fields.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { RECORD_CHANGES_TOPIC, type RecordChange, withRecordChange } from './changes';
export { objectEventEntry } from './events';
export {
  checkCacheControl,
  checkFolder,
  checkKey,
  checkMetadataSize,
  checkOriginalName,
  checkVisibility,
  isHeaderSafe,
  MAX_KEY_LENGTH,
  MAX_METADATA_BYTES,
  ORIGINAL_NAME,
} from './fields';
export {
  type AccountStateDoc,
  type AssetDoc,
  assetModels,
  type AssetModels,
  type AssetType,
  type AssetVersion,
  type BucketDoc,
  type GrantDoc,
  type JobDoc,
  partCount,
  type SessionDoc,
  VISIBILITIES,
  type Visibility,
} from './model';
export { cacheControlText, ifMatch, P, str, tag } from './route-fields';
export { SCOPES } from './scopes';
export { assetView, publicUrl } from './view';
