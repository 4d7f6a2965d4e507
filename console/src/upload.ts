import { ApiError, api, idempotencyKey, sendWithProgress, type UploadProgress } from './api';

/**
 * Assets uploads (docs/areas/assets.md): a small file in one multipart `POST /api/v1/assets/upload`;
 * a large one through a chunked upload session (`POST /upload-sessions`, `PUT {url}/parts/{n}` with
 * `X-Content-SHA256`, `POST /upload-sessions/{id}/complete`), each part retried on its own, so a
 * dropped connection costs one part, not the file.
 */
export const CHUNKED_FROM_BYTES = 32 * 1024 * 1024;
const PART_SIZE = 8 * 1024 * 1024;
const PART_ATTEMPTS = 4;

export interface UploadOptions {
  folder?: string;
  visibility?: string;
  onProgress: (p: UploadProgress) => void;
  signal?: AbortSignal;
}

export interface UploadedAsset {
  id: string;
  key: string;
}

export function uploadAsset(file: File, o: UploadOptions): Promise<UploadedAsset> {
  return file.size >= CHUNKED_FROM_BYTES ? chunked(file, o) : simple(file, o);
}

function simple(file: File, o: UploadOptions): Promise<UploadedAsset> {
  const form = new FormData();
  // Fields first: the route reads them before it streams the file.
  if (o.folder) form.append('folder', o.folder);
  if (o.visibility) form.append('visibility', o.visibility);
  form.append('file', file, file.name);
  return sendWithProgress<UploadedAsset>('POST', '/api/v1/assets/upload', form, o.onProgress, { signal: o.signal });
}

interface Session {
  upload_session_id: string;
  url: string;
  part_size: number;
  part_count: number;
  parts: { part_number: number }[];
}

async function sha256Hex(blob: Blob): Promise<string> {
  if (!crypto.subtle) {
    throw new ApiError(0, 'insecure_context', 'Large uploads need the console over https (or on localhost) to checksum parts.');
  }
  const digest = await crypto.subtle.digest('SHA-256', await blob.arrayBuffer());
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The signed address as a same-origin path (the page may use another host name for the bridge). */
function samePath(url: string): string {
  const u = new URL(url, location.href);
  return `${u.pathname}${u.search}`;
}

async function chunked(file: File, o: UploadOptions): Promise<UploadedAsset> {
  const session = await api<Session>('/api/v1/assets/upload-sessions', {
    method: 'POST',
    headers: { 'idempotency-key': idempotencyKey() },
    body: {
      mode: 'chunked',
      file_name: file.name,
      file_size: file.size,
      ...(file.type ? { mime_type: file.type } : {}),
      part_size: PART_SIZE,
      ...(o.folder ? { folder: o.folder } : {}),
      ...(o.visibility ? { visibility: o.visibility } : {}),
    },
    signal: o.signal,
  });
  const base = samePath(session.url);
  const size = session.part_size;
  let done = 0;
  for (let n = 1; n <= session.part_count; n++) {
    const part = file.slice((n - 1) * size, Math.min(file.size, n * size));
    const sum = await sha256Hex(part);
    for (let attempt = 1; ; attempt++) {
      try {
        await sendWithProgress(
          'PUT',
          `${base}/parts/${n}`,
          part,
          (p) => o.onProgress({ loaded: done + p.loaded, total: file.size }),
          { headers: { 'x-content-sha256': sum, 'content-type': 'application/octet-stream' }, signal: o.signal },
        );
        break;
      } catch (e) {
        const retriable = e instanceof ApiError && (e.status === 0 || e.status >= 500) && e.code !== 'aborted';
        if (!retriable || attempt >= PART_ATTEMPTS) throw e;
        await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
      }
    }
    done += part.size;
    o.onProgress({ loaded: done, total: file.size });
  }
  return api<UploadedAsset>(`/api/v1/assets/upload-sessions/${session.upload_session_id}/complete`, {
    method: 'POST',
    signal: o.signal,
  });
}
