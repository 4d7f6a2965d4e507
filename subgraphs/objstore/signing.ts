import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Push signatures (spec 5.9): HMAC-SHA256 keyed with the subscription's secret over the ASCII
 * timestamp, a dot, and the exact raw body; sent as `X-Platform-Signature: sha256=<hex>` beside
 * `X-Platform-Timestamp` (Unix seconds).
 */
export const SIGNATURE_HEADER = 'X-Platform-Signature';
export const TIMESTAMP_HEADER = 'X-Platform-Timestamp';
export const DELIVERY_ID_HEADER = 'X-Platform-Delivery-ID';
export const EVENT_ID_HEADER = 'X-Platform-Event-ID';
const SCHEME = 'sha256=';

/** A new signing secret: `whsec_` and 32 random bytes (base64url); the whole string is the HMAC key. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

export function signPush(secret: string, timestamp: number, rawBody: string): string {
  return SCHEME + createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex');
}

/** What a receiver does (README): verify the raw body and the timestamp's age. */
export function verifyPush(
  secret: string,
  timestamp: string,
  rawBody: string,
  signature: string,
  toleranceS = 300,
  nowS = Date.now() / 1000,
): boolean {
  const ts = Number(timestamp);
  if (!Number.isInteger(ts) || Math.abs(nowS - ts) > toleranceS) return false;
  const expected = Buffer.from(signPush(secret, ts, rawBody));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
