import { badRequest } from '../../../core/errors';
import { VISIBILITIES, type Visibility } from './model';

/**
 * The rules of an asset's stored fields, checked by the service on every way in (REST, GraphQL,
 * upload sessions, widget uploads, MCP tools) and relied on by the CDN, which writes some of them
 * into response headers (decision 0096).
 */

/** Longest object key and folder (spec leaves them open; docs/spec-decisions.md). */
export const MAX_KEY_LENGTH = 1024;
export const MAX_CACHE_CONTROL_LENGTH = 256;
/** The JSON size of an asset's metadata, on upload and after a merge. */
export const MAX_METADATA_BYTES = 16 * 1024;

// C0 controls, DEL and the C1 controls: never in a key, a folder or a header value.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

const invalid = (field: string, message: string) =>
  badRequest('validation_failed', `${field}: ${message}`, { fields: [{ field, problem: message }] });

/** Why `key` (an object key, or a folder with `folder: true`) is refused, or null. */
export function keyProblem(key: string, opts: { folder?: boolean } = {}): string | null {
  if (!opts.folder && key.length === 0) return 'must not be empty';
  if (key.length > MAX_KEY_LENGTH) return `must be at most ${MAX_KEY_LENGTH} characters`;
  if (CONTROL.test(key)) return 'must not contain control characters';
  if (key.includes('\\')) return 'must not contain a backslash';
  if (key.startsWith('/')) return 'must not start with /';
  if (key.split('/').some((s) => s === '.' || s === '..')) return 'must not contain . or .. segments';
  return null;
}

export function checkKey(key: string, field = 'key'): string {
  const problem = keyProblem(key);
  if (problem) throw invalid(field, problem);
  return key;
}

export function checkFolder(folder: string, field = 'folder'): string {
  const problem = keyProblem(folder, { folder: true });
  if (problem) throw invalid(field, problem);
  return folder;
}

export function checkVisibility(v: string, field = 'visibility'): Visibility {
  if (!(VISIBILITIES as readonly string[]).includes(v)) throw invalid(field, `must be one of ${VISIBILITIES.join(', ')}`);
  return v as Visibility;
}

export function checkOriginalName(v: string, field = 'original_name'): string {
  if (v.length > 255 || !ORIGINAL_NAME.test(v)) {
    throw invalid(field, 'must be 1 to 255 characters without control characters');
  }
  return v;
}

/** Visible ASCII and spaces: what may be written into an HTTP header (also the document's `pattern`). */
export const HEADER_SAFE = /^[\x20-\x7e]+$/;
/** An original name: at least one visible character, no control characters (also the document's `pattern`). */
// eslint-disable-next-line no-control-regex
export const ORIGINAL_NAME = /^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$/;

/** A value that may be written into an HTTP header: visible ASCII and spaces, no CR/LF, bounded. */
export const isHeaderSafe = (v: string, max = MAX_CACHE_CONTROL_LENGTH): boolean =>
  v.length > 0 && v.length <= max && HEADER_SAFE.test(v);

export function checkCacheControl(v: string, field = 'cache_control'): string {
  if (!isHeaderSafe(v)) {
    throw invalid(field, `must be 1 to ${MAX_CACHE_CONTROL_LENGTH} visible ASCII characters (no line breaks)`);
  }
  return v;
}

/** The bytes of `metadata` as stored (JSON), refused beyond MAX_METADATA_BYTES. */
export function checkMetadataSize(metadata: Record<string, unknown>, field = 'metadata'): Record<string, unknown> {
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  if (bytes > MAX_METADATA_BYTES) {
    throw badRequest('validation_failed', `${field}: must be at most ${MAX_METADATA_BYTES} bytes of JSON (is ${bytes})`, {
      fields: [{ field, problem: `must be at most ${MAX_METADATA_BYTES} bytes of JSON` }],
      limit: MAX_METADATA_BYTES,
      size: bytes,
    });
  }
  return metadata;
}
