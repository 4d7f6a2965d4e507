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

/** Error envelope of an area (spec 1.5): the same shape with `success` false and `error`. */
export function errorEnvelope(kind: EnvelopeKind, status: number, error: BridgeError): Record<string, unknown> {
  if (kind === 'commerce') {
    return { success: false, status: 'error', status_code: status, message: error.message, data: null, error };
  }
  return { success: false, error };
}
