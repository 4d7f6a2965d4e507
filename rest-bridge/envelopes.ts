import { STATUS_CODES } from 'node:http';
import type { EnvelopeKind } from '../core/rest-route';

export interface BridgeError {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** Success envelope of an area (spec 1.4): `data` always, plus commerce's status fields. */
export function successEnvelope(kind: EnvelopeKind, status: number, data: unknown): Record<string, unknown> {
  if (kind === 'commerce') {
    return { success: true, status: 'success', status_code: status, message: STATUS_CODES[status] ?? 'OK', data };
  }
  return { success: true, data };
}

/**
 * The commerce code of each status the bridge or kernel answers on a commerce route with a code of
 * its own (spec convention 3: every commerce error is `COMMERCE_`-prefixed). A refused body or
 * query (broken JSON, two values, a forbidden key, an unknown field; 400 elsewhere) is
 * `COMMERCE_INVALID_CONFIGURATION` with that code's status, 422 (spec 7.2). The codes the spec
 * does not show are listed in `subgraphs/commerce/errors.ts` and docs/spec-decisions.md.
 */
export const COMMERCE_TRANSPORT_ERRORS: Readonly<Record<number, { code: string; status: number }>> = {
  400: { code: 'COMMERCE_INVALID_CONFIGURATION', status: 422 },
  401: { code: 'COMMERCE_UNAUTHENTICATED', status: 401 },
  402: { code: 'COMMERCE_SUBSCRIPTION_INACTIVE', status: 402 },
  403: { code: 'COMMERCE_FORBIDDEN', status: 403 },
  404: { code: 'COMMERCE_NOT_FOUND', status: 404 },
  405: { code: 'COMMERCE_METHOD_NOT_ALLOWED', status: 405 },
  409: { code: 'COMMERCE_IDEMPOTENCY_CONFLICT', status: 409 },
  413: { code: 'COMMERCE_PAYLOAD_TOO_LARGE', status: 413 },
  415: { code: 'COMMERCE_UNSUPPORTED_MEDIA_TYPE', status: 415 },
  422: { code: 'COMMERCE_INVALID_CONFIGURATION', status: 422 },
  429: { code: 'COMMERCE_TOO_MANY_REQUESTS', status: 429 },
  500: { code: 'COMMERCE_OPERATION_FAILED', status: 500 },
  503: { code: 'COMMERCE_UNAVAILABLE', status: 503 },
};

/**
 * The error an area answers with: as given, except on a commerce route, where a code without the
 * `COMMERCE_` prefix becomes the commerce code of its status (a 400 becomes 422). Message and
 * details are kept.
 */
export function areaError(kind: EnvelopeKind, status: number, error: BridgeError): { status: number; error: BridgeError } {
  if (kind !== 'commerce' || error.code.startsWith('COMMERCE_')) return { status, error };
  const to = COMMERCE_TRANSPORT_ERRORS[status] ?? {
    code: status >= 500 ? 'COMMERCE_OPERATION_FAILED' : 'COMMERCE_INVALID_CONFIGURATION',
    status,
  };
  return { status: to.status, error: { ...error, code: to.code } };
}

/** Error envelope of an area (spec 1.5): the same shape with `success` false and `error`. */
export function errorEnvelope(kind: EnvelopeKind, status: number, error: BridgeError): Record<string, unknown> {
  if (kind === 'commerce') {
    const a = areaError(kind, status, error);
    return { success: false, status: 'error', status_code: a.status, message: a.error.message, data: null, error: a.error };
  }
  return { success: false, error };
}
