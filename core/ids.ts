import { randomUUID } from 'node:crypto';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** A new random identifier (UUID v4), used for documents, operations and events. */
export function newId(): string {
  return randomUUID();
}

/** True when `s` is a UUID (versions 1–8, RFC 4122 variant), in any letter case. */
export function isUuid(s: unknown): s is string {
  return typeof s === 'string' && UUID_RE.test(s);
}
