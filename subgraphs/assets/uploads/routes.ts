import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { CAPABILITY_MAX_SECONDS } from './capabilities';
import { MAX_KEY_LENGTH } from './uploads';
import { VISIBILITIES, P, cacheControlText, str, tag, SCOPES } from '../records';
import { revisionHeader } from '../revisions';

const sessionShared = {
  bucket: str.min(1).optional(),
  key: str.min(1).max(MAX_KEY_LENGTH).optional(),
  folder: str.max(MAX_KEY_LENGTH).optional(),
  visibility: z.enum(VISIBILITIES).optional(),
  metadata: z.record(z.unknown()).optional(),
};
const sessionBody = z
  .object({
    mode: z.enum(['chunked', 'single']).optional(),
    file_name: str.min(1).max(255),
    file_size: z.number().int().min(0),
    mime_type: str.max(127).optional(),
    checksum_sha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    part_size: z.number().int().positive().optional(),
    cache_control: cacheControlText.optional(),
    ...sessionShared,
  })
  .strict();
/** The legacy alias takes the same body with camelCase names as well (spec 9.5). */
const legacySessionBody = z
  .object({
    mode: z.enum(['chunked', 'single']).optional(),
    file_name: str.min(1).max(255).optional(),
    fileName: str.min(1).max(255).optional(),
    file_size: z.number().int().min(0).optional(),
    fileSize: z.number().int().min(0).optional(),
    mime_type: str.max(127).optional(),
    mimeType: str.max(127).optional(),
    checksum_sha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    checksumSha256: str.regex(/^[0-9a-fA-F]{64}$/).optional(),
    part_size: z.number().int().positive().optional(),
    partSize: z.number().int().positive().optional(),
    cache_control: cacheControlText.optional(),
    cacheControl: str.min(1).max(256).optional(),
    ...sessionShared,
  })
  .strict()
  .refine((b) => (b.file_name ?? b.fileName) !== undefined && (b.file_size ?? b.fileSize) !== undefined, {
    message: 'file_name and file_size are required',
  });

const capabilityBody = z
  .object({
    bucket: str.min(1).optional(),
    folder: str.max(MAX_KEY_LENGTH).optional(),
    expires_in: z.number().int().min(1).max(CAPABILITY_MAX_SECONDS).optional(),
  })
  .strict();

/** Spec 4.3 upload capabilities (the widget's) and upload sessions (the bytes go to the data plane). */
export const uploadRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: `${P}/upload-capabilities`,
    summary: 'One short-lived capability token for browser uploads at {base_url}/assets/widget',
    tag,
    operation: 'create-upload-capability',
    body: capabilityBody,
    scope: SCOPES.write,
    // 404: the bucket named is not one of the account's.
    errors: [404],
    derive: { body: '.' },
    select: (d) => d.createAssetUploadCapability,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-sessions`,
    summary: 'Create an upload session (single signed PUT, or chunked); send Idempotency-Key',
    tag,
    operation: 'create-upload-session',
    body: sessionBody,
    scope: SCOPES.write,
    // 402: the session reserves its file_size of the account's quota at creation (decision 0098).
    errors: [402],
    derive: { body: 'input', headers: ['Idempotency-Key'] },
    select: (d) => d.createAssetUploadSession,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-url`,
    summary: 'Legacy alias of POST /upload-sessions (accepts camelCase names)',
    tag,
    operation: 'create-upload-session',
    body: legacySessionBody,
    scope: SCOPES.write,
    errors: [402],
    derive: { headers: ['Idempotency-Key'] },
    // Both spellings of a field are accepted: the mapping picks one.
    variables: (r) => ({
      input: {
        mode: r.body.mode,
        fileName: r.body.file_name ?? r.body.fileName,
        fileSize: r.body.file_size ?? r.body.fileSize,
        mimeType: r.body.mime_type ?? r.body.mimeType,
        checksumSha256: r.body.checksum_sha256 ?? r.body.checksumSha256,
        partSize: r.body.part_size ?? r.body.partSize,
        bucket: r.body.bucket,
        key: r.body.key,
        folder: r.body.folder,
        visibility: r.body.visibility,
        cacheControl: r.body.cache_control ?? r.body.cacheControl,
        metadata: r.body.metadata,
      },
    }),
    select: (d) => d.createAssetUploadSession,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/upload-sessions/{sessionID}`,
    summary: 'An upload session with its received parts',
    tag,
    operation: 'get-upload-session',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetUploadSession,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/upload-sessions/{sessionID}`,
    summary: 'Cancel an upload session and remove its parts',
    tag,
    operation: 'cancel-upload-session',
    scope: SCOPES.write,
    derive: { params: 'id' },
    select: (d) => d.cancelAssetUploadSession,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/upload-sessions/{sessionID}/complete`,
    summary: 'Complete a chunked session: assemble the parts and check the whole-file checksum',
    tag,
    operation: 'complete-upload-session',
    scope: SCOPES.write,
    derive: { params: 'id' },
    select: (d) => d.completeAssetUploadSession,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
];
