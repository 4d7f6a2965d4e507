import { z } from 'zod';
import { cacheControlText, str, VISIBILITIES } from '../records';
import { RETENTION_DAYS_MAX } from './buckets';

const region = str.min(1).max(63);

/**
 * A bucket's JSON body, declared once: the Assets bucket routes take all of it, the object-store
 * bucket routes (bucket-ops/routes.ts) pick their fields from it, so a field has one rule everywhere.
 * Its keys become the GraphQL input's by rule (`camelKeys`).
 */
export const bucketBody = z
  .object({
    name: str
      .min(1)
      .max(63)
      .regex(/^[a-z0-9][a-z0-9._-]*$/i, 'letters, digits, . _ -'),
    default_visibility: z.enum(VISIBILITIES).optional(),
    cache_control: cacheControlText.optional(),
    versioning: z.boolean().optional(),
    retention_days: z.number().int().min(0).max(RETENTION_DAYS_MAX).nullable().optional(),
    max_bytes: z.number().int().positive().nullable().optional(),
    allowed_mime_types: z.array(str.min(1).max(127)).max(100).nullable().optional(),
    allowed_origins: z.array(str.min(1).max(255)).max(100).optional(),
    home_region: region.optional(),
    replication_policy: z
      .object({ regions: z.array(region).max(10) })
      .strict()
      .optional(),
    lifecycle_policy: z.record(z.unknown()).nullable().optional(),
    domain: str.min(1).max(253).nullable().optional(),
  })
  .strict();
export type BucketBody = z.infer<typeof bucketBody>;
