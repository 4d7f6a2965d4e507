import { z } from 'zod';
import { badRequest } from '../../../core/errors';
import type { ConnectionType } from './model';

/** Non-secret settings of an S3-compatible source. */
export const s3ConfigSchema = z
  .object({
    /** The server's address; unset = AWS itself. */
    endpoint: z.string().min(1).max(2048).optional(),
    region: z.string().min(1).max(63).default('us-east-1'),
    bucket: z.string().min(1).max(255),
    /** Only keys under this prefix are listed and copied. */
    prefix: z.string().max(1024).default(''),
    access_key_id: z.string().min(1).max(256).optional(),
  })
  .strict();
export const s3SecretsSchema = z.object({ secret_access_key: z.string().min(1).max(1024).nullable().optional() }).strict();

/** Non-secret settings of an HTTP source: a JSON manifest listing its objects (docs/areas/assets.md). */
export const httpConfigSchema = z
  .object({
    base_url: z.string().min(1).max(2048),
    manifest_path: z.string().min(1).max(1024).default('manifest.json'),
  })
  .strict();
export const httpSecretsSchema = z.object({ bearer_token: z.string().min(1).max(4096).nullable().optional() }).strict();

export const CONFIG_SCHEMAS = { s3: s3ConfigSchema, http: httpConfigSchema } as const;
export const SECRETS_SCHEMAS = { s3: s3SecretsSchema, http: httpSecretsSchema } as const;
export type S3Config = z.infer<typeof s3ConfigSchema>;
export type HttpConfig = z.infer<typeof httpConfigSchema>;

function parse<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, field: string): T {
  const r = schema.safeParse(value ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    throw badRequest('validation_failed', `${[field, ...issue.path].join('.')}: ${issue.message}`);
  }
  return r.data;
}

export const parseConfig = (type: ConnectionType, value: unknown) =>
  parse(CONFIG_SCHEMAS[type] as z.ZodType<Record<string, unknown>, z.ZodTypeDef, unknown>, value, 'config');
export const parseSecrets = (type: ConnectionType, value: unknown) =>
  parse(SECRETS_SCHEMAS[type] as z.ZodType<Record<string, string | null | undefined>, z.ZodTypeDef, unknown>, value, 'secrets');
