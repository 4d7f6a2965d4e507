import path from 'node:path';
import type { BlobStore } from '../../core/blobs/blob-store';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { S3BlobStore, s3Client } from '../../core/blobs/s3-blob-store';
import type { PublisherSettings } from './settings';

/**
 * Where recovery points keep their bytes (docs/decisions/0150-recovery-point-bytes.md): the
 * kernel's blob store, on the filesystem under `<DATA_DIR>/site-backups` by default
 * (`PUBLISHER_BACKUP_DIR`), or an S3-compatible bucket (`PUBLISHER_BACKUP_STORE=s3` and the
 * `PUBLISHER_BACKUP_S3_*` settings) in production.
 */
export function backupStore(settings: PublisherSettings, dataDir: string): BlobStore {
  if (settings.PUBLISHER_BACKUP_STORE === 's3') {
    return new S3BlobStore({
      client: s3Client({
        endpoint: settings.PUBLISHER_BACKUP_S3_ENDPOINT,
        region: settings.PUBLISHER_BACKUP_S3_REGION,
        accessKeyId: settings.PUBLISHER_BACKUP_S3_ACCESS_KEY_ID,
        secretAccessKey: settings.PUBLISHER_BACKUP_S3_SECRET_ACCESS_KEY,
      }),
      bucket: settings.PUBLISHER_BACKUP_S3_BUCKET,
      prefix: settings.PUBLISHER_BACKUP_S3_PREFIX,
    });
  }
  return new FsBlobStore(settings.PUBLISHER_BACKUP_DIR ?? path.resolve(dataDir, 'site-backups'));
}
