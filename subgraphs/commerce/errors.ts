import { PlatformError } from '../../core/errors';

/**
 * The commerce error codes of spec 7.2 with their HTTP statuses, plus the few the spec leaves to
 * us (docs/spec-decisions.md, Commerce). Every commerce error carries the `COMMERCE_` prefix.
 */
export const COMMERCE_CODES = {
  COMMERCE_DISABLED: 404,
  COMMERCE_NOT_FOUND: 404,
  COMMERCE_INVALID_CONFIGURATION: 422,
  COMMERCE_INVALID_CREDENTIALS: 422,
  COMMERCE_CONFIG_MISMATCH: 422,
  COMMERCE_INCOMPATIBLE_DATABASE: 422,
  COMMERCE_UNSUPPORTED_HYDROGEN_RUNTIME: 422,
  COMMERCE_FAILED_HEALTH_GATE: 409,
  COMMERCE_IDEMPOTENCY_CONFLICT: 409,
  COMMERCE_RATE_LIMITED: 503,
  COMMERCE_OPERATION_FAILED: 500,
  // Not in 7.2 (the spec shows no code for them): chosen here.
  COMMERCE_UNAUTHENTICATED: 401,
  COMMERCE_SUBSCRIPTION_INACTIVE: 402,
  COMMERCE_FORBIDDEN: 403,
  // The account's artifact quota has no room for an upload (docs/decisions/0271-artifact-ownership.md).
  COMMERCE_ARTIFACT_QUOTA_EXCEEDED: 413,
  // An environment's memory_mb over its plan's maximum (docs/spec-decisions.md, Commerce).
  COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN: 422,
  // Transport errors of the bridge and kernel on commerce routes (rest-bridge/envelopes.ts).
  COMMERCE_METHOD_NOT_ALLOWED: 405,
  COMMERCE_PAYLOAD_TOO_LARGE: 413,
  COMMERCE_UNSUPPORTED_MEDIA_TYPE: 415,
  COMMERCE_TOO_MANY_REQUESTS: 429,
  COMMERCE_UNAVAILABLE: 503,
} as const;

export type CommerceCode = keyof typeof COMMERCE_CODES;

/** A commerce error with the status its code has; `retriable` only for work a worker may repeat. */
export function commerceError(
  code: CommerceCode,
  message: string,
  details: Record<string, unknown> = {},
  retriable = false,
): PlatformError {
  return new PlatformError(code, COMMERCE_CODES[code], message, details, retriable);
}

export const invalidConfiguration = (message: string, details: Record<string, unknown> = {}) =>
  commerceError('COMMERCE_INVALID_CONFIGURATION', message, details);

export const commerceNotFound = (what = 'project') => commerceError('COMMERCE_NOT_FOUND', `${what} not found`);
