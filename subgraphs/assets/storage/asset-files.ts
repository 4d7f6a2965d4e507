import type { AssetFile, AssetFiles } from '../../../core/asset-files';
import { isUuid } from '../../../core/ids';
import type { AssetsService } from './service';
import type { AssetDoc } from '../records';

/**
 * The Assets side of the `assetFiles` port: an account's asset as a file another area may send on
 * (mail attachments). Only what the CDN would deliver to its owner counts — ready and scanned
 * clean; a quarantined or half-uploaded asset is not a file.
 */
export function assetFilesPort(assets: AssetsService): AssetFiles {
  return {
    async file(accountId, assetId, version): Promise<AssetFile | null> {
      if (!isUuid(assetId)) return null;
      const asset = await assets.m.Asset.findOne({ _id: assetId, accountId }, { outbox: 0 }).lean<AssetDoc>().exec();
      if (!asset || asset.status !== 'ready' || asset.scanStatus !== 'clean') return null;
      const v = asset.versions.find((x) => x.number === (version ?? asset.currentVersion));
      if (!v) return null;
      const region = await assets.locate(asset, v.sha256);
      if (!region) return null;
      return {
        assetId,
        version: v.number,
        filename: v.originalName || asset.originalName,
        contentType: v.mimeType,
        size: v.size,
        sha256: v.sha256,
        open: () => assets.blobs.read(region, v.sha256),
      };
    },
  };
}
