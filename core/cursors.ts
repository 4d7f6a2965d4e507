import { createHmac, timingSafeEqual } from 'node:crypto';
import { config } from './config';
import { badRequest } from './errors';

/**
 * The shape of every cursor `encodeCursor` writes: a base64url position, a dot and 22 base64url
 * characters of its MAC. A REST query documents and validates a cursor with it (one schema);
 * whether it is genuine is `decodeCursor`'s to say.
 */
export const CURSOR_PATTERN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/;

/**
 * Opaque, signed cursors. A cursor is bound to the listing it came from (`binding`: e.g. the sort
 * key and direction), so a cursor from one sort order is refused by another.
 */
export function encodeCursor(position: Record<string, unknown>, binding: string): string {
  const body = Buffer.from(JSON.stringify({ b: binding, p: position })).toString('base64url');
  const mac = createHmac('sha256', config().CURSOR_SIGNING_KEY).update(body).digest('base64url').slice(0, 22);
  return `${body}.${mac}`;
}

export function decodeCursor<T extends Record<string, unknown>>(cursor: string, binding: string): T {
  const [body, mac] = cursor.split('.');
  if (!body || !mac) throw badRequest('invalid_cursor', 'cursor is malformed');
  const expected = createHmac('sha256', config().CURSOR_SIGNING_KEY).update(body).digest('base64url').slice(0, 22);
  if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected))) {
    throw badRequest('invalid_cursor', 'cursor is not valid');
  }
  const decoded = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { b: string; p: T };
  if (decoded.b !== binding) throw badRequest('invalid_cursor', 'cursor belongs to a different sort or filter');
  return decoded.p;
}
