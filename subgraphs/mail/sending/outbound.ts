import { type UrlRefusals, checkUrlShape, parseAllowHosts, postPinned, resolveTarget } from '../../../core/outbound-http';

/**
 * Mail webhook requests under the kernel's outbound rules (`core/outbound-http.ts`, docs/contracts.md):
 * HTTPS only, no credentials, no private or reserved address (checked again at each send after
 * resolving the name, the connection pinned to the checked address), no redirects. Refusals are
 * 400 `invalid_webhook_url`.
 */
export const OUTBOUND_TIMEOUT_MS = 10_000;
/** Response bytes kept per attempt (spec 8's push-delivery figure, reused here). */
export const RESPONSE_EXCERPT_BYTES = 2048;

const REFUSALS: UrlRefusals = { invalid: 'invalid_webhook_url', unsafe: 'invalid_webhook_url' };

export const allowHosts = parseAllowHosts;

/** Checks a webhook URL's form when it is registered (the name is resolved at each send). */
export function checkWebhookUrl(raw: string, allowed: Set<string>): string {
  return checkUrlShape(raw, allowed, REFUSALS).toString();
}

export interface PostResult {
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
}

/** POSTs `body` with `headers` to `url`, resolving and checking the address first. Never throws. */
export async function safePost(
  url: string,
  body: string,
  headers: Record<string, string>,
  allowed: Set<string>,
): Promise<PostResult> {
  const started = performance.now();
  const done = (r: Omit<PostResult, 'durationMs'>): PostResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
  try {
    const target = await resolveTarget(url, allowed, { refusals: REFUSALS });
    if (!target) return done({ statusCode: null, responseExcerpt: null, error: 'the host does not resolve' });
    const res = await postPinned(target, body, headers, {
      timeoutMs: OUTBOUND_TIMEOUT_MS,
      maxExcerptBytes: RESPONSE_EXCERPT_BYTES,
    });
    return done({ statusCode: res.statusCode, responseExcerpt: res.excerpt, error: null });
  } catch (e) {
    return done({ statusCode: null, responseExcerpt: null, error: (e as Error).message });
  }
}
