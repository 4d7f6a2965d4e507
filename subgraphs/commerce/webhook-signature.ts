import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Standard Webhooks signatures (docs/contracts.md, "Outbound HTTP": "Signatures follow Standard Webhooks"): the sender
 * puts `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of "id.timestamp.rawBody">`, space-separated when several) on the request. The
 * receiver verifies over the exact raw bytes before parsing anything. Used by the stand-in (signs)
 * and the platform's receiver (verifies); a real commerce platform would sign the same way.
 */

/** Requests older or newer than this are refused (replay window): 5 minutes. */
export const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export const WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

function secretBytes(secret: string): Buffer {
  // `whsec_<base64>` is the Standard Webhooks form; any other string is used as its UTF-8 bytes.
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

export function signWebhook(secret: string, id: string, timestamp: number, rawBody: Buffer | string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.`).update(rawBody).digest('base64');
  return `v1,${mac}`;
}

export type WebhookVerdict = { ok: true; id: string; timestamp: number } | { ok: false; reason: string };

export function verifyWebhook(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  rawBody: Buffer,
  now = Date.now(),
): WebhookVerdict {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const id = one(WEBHOOK_HEADERS.id);
  const ts = one(WEBHOOK_HEADERS.timestamp);
  const sig = one(WEBHOOK_HEADERS.signature);
  if (!id || !ts || !sig) return { ok: false, reason: 'signature headers missing' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'timestamp malformed' };
  const timestamp = Number(ts);
  if (Math.abs(now / 1000 - timestamp) > WEBHOOK_TOLERANCE_SECONDS) return { ok: false, reason: 'timestamp outside tolerance' };
  const expected = Buffer.from(signWebhook(secret, id, timestamp, rawBody));
  for (const candidate of sig.split(' ')) {
    const given = Buffer.from(candidate);
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true, id, timestamp };
  }
  return { ok: false, reason: 'signature mismatch' };
}
