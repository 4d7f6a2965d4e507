import { z } from 'zod';

const list = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    );

/** The assets area's env settings (spec 8 leaves the numbers open: docs/spec-decisions.md). */
export const assetsSettingsSchema = z.object({
  /** Root of the filesystem blob store; default `<DATA_DIR>/assets`. */
  ASSETS_BLOB_DIR: z.string().optional(),
  /** Regions blobs may live in; the first is the default home region. */
  ASSETS_REGIONS: list('local-1,local-2'),
  /** Byte quota per account, by plan. */
  ASSETS_QUOTA_BYTES_FREE: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 ** 3),
  ASSETS_QUOTA_BYTES_PRO: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024 ** 3),
  /** How long a delete job waits before it runs (a queued delete can still be cancelled), in ms. */
  ASSETS_DELETE_DELAY_MS: z.coerce.number().int().min(0).default(1000),
  /** A staged upload file untouched this long belongs to a dead process, in ms. */
  ASSETS_STAGING_STALE_MS: z.coerce.number().int().min(0).default(60_000),
  /** `fs` (default) or `s3` (an S3-compatible store through the AWS SDK; then the ASSETS_S3_* settings). */
  ASSETS_BLOB_STORE: z.enum(['fs', 's3']).default('fs'),
  /** Endpoint of an S3-compatible server; unset = AWS itself. */
  ASSETS_S3_ENDPOINT: z.string().optional(),
  ASSETS_S3_REGION: z.string().default('us-east-1'),
  ASSETS_S3_BUCKET: z.string().default('assets'),
  ASSETS_S3_PREFIX: z.string().default(''),
  ASSETS_S3_ACCESS_KEY_ID: z.string().optional(),
  ASSETS_S3_SECRET_ACCESS_KEY: z.string().optional(),
  /** `host:port` of clamd; unset → the EICAR-only scanner. */
  ASSETS_CLAMD_ADDRESS: z.string().optional(),
  /** Longest `expires_in` of a signed URL, in seconds (7 days). */
  ASSETS_SIGNED_URL_MAX_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(7 * 24 * 3600),
  /** Origins (besides `{base_url}`'s own) a browser may call `/api/v1/assets/mcp` from; comma-separated. */
  ASSETS_MCP_ALLOWED_ORIGINS: list(''),
  /** Image transforms (CDN derivatives, `POST /{id}/transforms`, eager) running at once in one process. */
  ASSETS_TRANSFORM_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
  /** Of those, at most this many for one account (its others wait in its own queue). */
  ASSETS_TRANSFORM_ACCOUNT_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(2),
});

export type AssetsSettings = z.infer<typeof assetsSettingsSchema>;

export const defaultAssetsSettings = (): AssetsSettings => assetsSettingsSchema.parse({});
