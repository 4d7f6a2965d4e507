/**
 * REST calls of the console: same-origin, the session cookie as the key (`credentials: 'same-origin'`).
 * Every error keeps the API's `code` and `message` (the bridge's envelope, rest-bridge/envelopes.ts).
 */

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;
  constructor(status: number, code: string, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

type UnauthorizedListener = () => void;
let onUnauthorized: UnauthorizedListener = () => undefined;

/** The session gate registers here: a 401 from any call means the session has ended. */
export function setUnauthorizedListener(listener: UnauthorizedListener): void {
  onUnauthorized = listener;
}

export function notifyUnauthorized(): void {
  onUnauthorized();
}

/** The error of an answer's body: the standard envelope, the commerce envelope, or a bare Fastify error. */
export function errorFromBody(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as { error?: unknown; code?: unknown; message?: unknown };
  const e = (typeof b.error === 'object' && b.error !== null ? b.error : b) as {
    code?: unknown;
    message?: unknown;
    details?: unknown;
  };
  const code = typeof e.code === 'string' ? e.code : `http_${status}`;
  const message = typeof e.message === 'string' && e.message ? e.message : `The request failed (HTTP ${status}).`;
  const details = typeof e.details === 'object' && e.details !== null ? (e.details as Record<string, unknown>) : {};
  return new ApiError(status, code, message, details);
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 300) };
  }
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Do not treat a 401 as the end of the session (the sign-in call itself). */
  quietUnauthorized?: boolean;
  signal?: AbortSignal;
}

/** A JSON call; answers the envelope's `data` (null for 204), throws ApiError otherwise. */
export async function api<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  let body: BodyInit | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(path, { method: opts.method ?? 'GET', headers, body, credentials: 'same-origin', signal: opts.signal });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', 'The console could not reach the platform. Check the connection and try again.');
  }
  if (res.status === 204) return null as T;
  const parsed = await readBody(res);
  if (!res.ok) {
    if (res.status === 401 && !opts.quietUnauthorized) notifyUnauthorized();
    throw errorFromBody(res.status, parsed);
  }
  return ((parsed as { data?: unknown } | null)?.data ?? null) as T;
}

/** A random Idempotency-Key (crypto.randomUUID needs a secure context; getRandomValues does not). */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/**
 * A request with upload progress (fetch reports none): XMLHttpRequest, same origin, so the session
 * cookie goes as it does with fetch. Answers the envelope's `data`, throws ApiError otherwise.
 */
export function sendWithProgress<T>(
  method: string,
  path: string,
  body: XMLHttpRequestBodyInit,
  onProgress: (p: UploadProgress) => void,
  opts: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    xhr.setRequestHeader('accept', 'application/json');
    for (const [k, v] of Object.entries(opts.headers ?? {})) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : 0 });
    xhr.onerror = () =>
      reject(new ApiError(0, 'network_error', 'The upload was interrupted: the console could not reach the platform.'));
    xhr.onabort = () => reject(new ApiError(0, 'aborted', 'The upload was cancelled.'));
    xhr.onload = () => {
      let parsed: unknown = null;
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        parsed = { message: xhr.responseText.slice(0, 300) };
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve(((parsed as { data?: unknown } | null)?.data ?? null) as T);
      } else {
        if (xhr.status === 401) notifyUnauthorized();
        reject(errorFromBody(xhr.status, parsed));
      }
    };
    opts.signal?.addEventListener('abort', () => xhr.abort());
    xhr.send(body);
  });
}

export interface SessionData {
  account_id: string;
  key_id: string;
  role: string;
  scopes: string[];
}

export const session = {
  read: () => api<SessionData>('/console/api/session', { quietUnauthorized: true }),
  create: (apiKey: string) =>
    api<SessionData>('/console/api/session', { method: 'POST', body: { api_key: apiKey }, quietUnauthorized: true }),
  end: () => api<null>('/console/api/session', { method: 'DELETE', quietUnauthorized: true }),
};
