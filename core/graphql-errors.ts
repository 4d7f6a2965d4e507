import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { ArgumentValidationError } from 'type-graphql';
import { isUnreachable, serviceUnavailable } from './engine-errors';
import { isPlatformError } from './errors';
import { ForgedPrincipalError } from './principal';
import type { Logger } from './logger';

/** Extensions every platform error carries through subgraph → gateway → bridge. */
export interface PlatformErrorExtensions {
  code: string;
  status: number;
  details?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * Shapes a resolver error for the wire: typed platform errors keep code, status and details;
 * validation errors become 400s; anything unknown becomes a 500 that leaks no internals.
 */
export function formatPlatformError(formatted: GraphQLFormattedError, error: unknown, log?: Logger): GraphQLFormattedError {
  let original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
  // Apollo wraps validation-rule errors once more (ValidationError → rule's GraphQLError → PlatformError).
  if (original instanceof GraphQLError && isPlatformError(original.originalError)) original = original.originalError;
  // MongoDB or a remote subgraph unreachable: a retriable 503, never a 500.
  if (!isPlatformError(original) && isUnreachable(original)) original = serviceUnavailable();
  if (isPlatformError(original)) {
    return {
      message: original.message,
      path: formatted.path,
      extensions: { code: original.code, status: original.status, details: original.details },
    };
  }
  // type-graphql wraps whatever its validator threw: only a list of validation errors is the caller's fault.
  if (original instanceof ArgumentValidationError && Array.isArray(original.extensions.validationErrors)) {
    const details = {
      fields: original.extensions.validationErrors.map((v) => ({
        field: v.property,
        problems: Object.values(v.constraints ?? {}),
      })),
    };
    return {
      message: 'request validation failed',
      path: formatted.path,
      extensions: { code: 'invalid_request', status: 400, details },
    };
  }
  if (original instanceof ForgedPrincipalError) {
    return { message: 'request refused', extensions: { code: 'forbidden', status: 403 } };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && typeof formatted.extensions?.status === 'number') {
    // Already shaped by a subgraph (and passed through the gateway): keep code, status, details.
    const { status, details } = formatted.extensions as PlatformErrorExtensions;
    return { message: formatted.message, path: formatted.path, extensions: { code, status, details } };
  }
  if (
    code === 'GRAPHQL_VALIDATION_FAILED' ||
    code === 'GRAPHQL_PARSE_FAILED' ||
    code === 'BAD_USER_INPUT' ||
    code === 'BAD_REQUEST'
  ) {
    return { ...formatted, extensions: { ...formatted.extensions, code: 'invalid_request', status: 400 } };
  }
  if (!(original instanceof GraphQLError) || formatted.path) {
    log?.error({ err: original }, 'unhandled resolver error');
    return {
      message: 'internal error',
      path: formatted.path,
      extensions: { code: 'internal_error', status: 500 },
    };
  }
  return formatted;
}
