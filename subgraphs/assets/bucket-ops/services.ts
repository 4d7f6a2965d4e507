import type { AccessLogWriter } from './access-log';
import type { BucketAnalyticsReader } from './analytics';
import type { InventoryExports } from './inventory';
import type { ObjstoreBuckets } from './objstore-buckets';
import type { BucketQuery } from './query';
import type { Relocations } from './relocations';

/**
 * Object-store bucket operations (decision 0029): `/objstore-buckets`, storage, relocation,
 * and the bucket's analytics, access logs, inventory exports, bounded query and website mode.
 */
export interface BucketOpsServices {
  bucketOps: {
    buckets: ObjstoreBuckets;
    relocations: Relocations;
    analytics: BucketAnalyticsReader;
    accessLog: AccessLogWriter;
    inventory: InventoryExports;
    query: BucketQuery;
  };
}
