import { fromBuffer } from 'file-type';
import { PlatformError } from '../../../core/errors';
import type { AccountStateDoc, AssetType, BucketDoc } from '../records';

/** Defaults of the content policy (spec 8: numeric values not shown; docs/spec-decisions.md). */
export const DEFAULT_POLICY = {
  allowedMimeTypes: null as string[] | null,
  maxImageBytes: 50 * 1024 ** 2,
  maxVideoBytes: 5 * 1024 ** 3,
  maxOtherBytes: 2 * 1024 ** 3,
  requireScan: false,
};

export interface ContentPolicy {
  allowedMimeTypes: string[] | null;
  maxImageBytes: number;
  maxVideoBytes: number;
  maxOtherBytes: number;
  requireScan: boolean;
}

export function policyOf(state: Partial<AccountStateDoc> | null): ContentPolicy {
  return {
    allowedMimeTypes: state?.allowedMimeTypes ?? DEFAULT_POLICY.allowedMimeTypes,
    maxImageBytes: state?.maxImageBytes ?? DEFAULT_POLICY.maxImageBytes,
    maxVideoBytes: state?.maxVideoBytes ?? DEFAULT_POLICY.maxVideoBytes,
    maxOtherBytes: state?.maxOtherBytes ?? DEFAULT_POLICY.maxOtherBytes,
    requireScan: state?.requireScan ?? DEFAULT_POLICY.requireScan,
  };
}

/** The largest file any type may be under this policy: the cap while the bytes stream in. */
export const largestAllowed = (p: ContentPolicy): number => Math.max(p.maxImageBytes, p.maxVideoBytes, p.maxOtherBytes);

/**
 * The MIME type of the bytes, never the client's claim: magic numbers via `file-type`, then
 * "text/plain" for valid UTF-8 without control bytes, else "application/octet-stream".
 */
export async function sniffMime(head: Buffer): Promise<string> {
  if (head.length === 0) return 'application/octet-stream';
  const found = await fromBuffer(head);
  if (found) return found.mime;
  if (looksLikeText(head)) return 'text/plain';
  return 'application/octet-stream';
}

function looksLikeText(buf: Buffer): boolean {
  // A multi-byte character cut at the end of the head is not a reason to call it binary.
  const text = new TextDecoder('utf-8', { fatal: false }).decode(buf.subarray(0, Math.max(0, buf.length - 3)));
  if (text.includes('\uFFFD')) return false;
  // eslint-disable-next-line no-control-regex
  return !/[\x00-\x08\x0E-\x1F\x7F]/.test(text);
}

export function assetTypeOf(mime: string): AssetType {
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('video/')) return 'video';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime === 'application/pdf' || mime.startsWith('text/') || mime.includes('document') || mime.includes('msword'))
    return 'document';
  return 'other';
}

const policyError = (message: string, details: Record<string, unknown>) =>
  new PlatformError('assets.policy_violation', 400, message, details);

/** `allowed` null or empty: no restriction. Entries may end in `/*` (`image/*`). */
function mimeAllowed(allowed: string[] | null | undefined, mime: string): boolean {
  if (!allowed || allowed.length === 0) return true;
  return allowed.some((a) => a === mime || (a.endsWith('/*') && mime.startsWith(a.slice(0, -1))));
}

/** Throws 400 `assets.policy_violation` when the sniffed type or the size breaks the account's or bucket's rules. */
export function checkContent(policy: ContentPolicy, bucket: BucketDoc, mime: string, size: number): void {
  if (!mimeAllowed(policy.allowedMimeTypes, mime)) {
    throw policyError(`content type ${mime} is not allowed by the content policy`, { mime_type: mime });
  }
  if (!mimeAllowed(bucket.allowedMimeTypes, mime)) {
    throw policyError(`content type ${mime} is not allowed in this bucket`, { mime_type: mime, bucket: bucket._id });
  }
  const type = assetTypeOf(mime);
  const limit = type === 'image' ? policy.maxImageBytes : type === 'video' ? policy.maxVideoBytes : policy.maxOtherBytes;
  if (size > limit) throw policyError(`a ${type} file may be at most ${limit} bytes`, { size, limit });
  if (bucket.maxBytes !== null && bucket.maxBytes !== undefined && size > bucket.maxBytes) {
    throw policyError(`this bucket takes files of at most ${bucket.maxBytes} bytes`, { size, limit: bucket.maxBytes });
  }
}
