import type { BlobStore } from '../../../core/blobs/blob-store';
import type { Config } from '../../../core/config';
import type { Principal } from '../../../core/principal';
import type { AssetsSettings } from '../settings';
import type { Uploads } from './uploads';
import type { Buckets } from '../buckets';
import type { AssetDoc, AssetModels } from '../records';

/**
 * What the upload sessions, upload capabilities and transformations need of Assets: the records,
 * the stores and the caller checks. `AssetsService` gives it; the helpers import this, not the
 * service, so the service and its helpers form no circle.
 */
export interface AssetAccess {
  readonly m: AssetModels;
  readonly blobs: BlobStore;
  /** The platform's configuration (its addresses are read at call time). */
  readonly cfg: Config;
  readonly settings: AssetsSettings;
  readonly buckets: Buckets;
  readonly uploads: Uploads;
  /** Whether the key a derived credential was made from is still live (decision 0099). */
  keyLive(accountId: string, keyId: string): Promise<boolean>;
  reader(p: Principal | null | undefined): Principal;
  writer(p: Principal | null | undefined, scope?: string): Principal;
  get(p: Principal | null, id: string): Promise<AssetDoc>;
  /** An asset record by id (any account): only for addresses already authorised by a signature. */
  anyAsset(assetId: string): Promise<AssetDoc | null>;
  /** Where a version's bytes are: the home copy, else a replica that has them. */
  locate(asset: AssetDoc, sha256: string): Promise<string | null>;
  /** Something was written: the relay and the worker may have work. */
  nudge(): void;
}
