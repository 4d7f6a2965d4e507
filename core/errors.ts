/**
 * Typed errors with a stable machine-readable code and an HTTP status. Services throw these;
 * subgraphs put `code`, `status` and `details` into GraphQL `extensions`; the REST bridge maps them
 * onto the area's envelope. Anything else becomes a 500 with no internals leaked.
 */
export class PlatformError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;
  /** Whether a worker may retry the work that raised it (kafkajs-style). */
  readonly retriable: boolean;

  constructor(code: string, status: number, message: string, details: Record<string, unknown> = {}, retriable = false) {
    super(message);
    this.name = 'PlatformError';
    this.code = code;
    this.status = status;
    this.details = details;
    this.retriable = retriable;
  }
}

export const badRequest = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 400, message, details);
export const unauthenticated = (message = 'bearer token missing or invalid') =>
  new PlatformError('unauthenticated', 401, message);
export const paymentRequired = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 402, message, details);
export const forbidden = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 403, message, details);
export const notFound = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 404, message, details);
export const conflict = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 409, message, details);

/** A failure of simulated or real infrastructure work that a worker should retry. */
export const retriable = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new PlatformError(code, 503, message, details, true);

export function isPlatformError(e: unknown): e is PlatformError {
  return e instanceof PlatformError;
}
