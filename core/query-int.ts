import { z } from 'zod';

/** Digits only, with an optional leading minus: the whole of what a query integer may be. */
const INTEGER_TEXT = /^-?\d+$/;

/**
 * A query-string integer within `[min, max]` (decision 0141). Only `^-?\d+$` is read as a number;
 * anything else — `" 5"`, `"0x10"`, `"1e1"`, `""`, `"5.0"`, a repeated parameter — stays what it
 * was and fails as not a number, so the bridge answers 400 with the field list in the area's
 * envelope. (`z.coerce.number()` read all of those as numbers.) Documented in OpenAPI as
 * `type: integer` with its bounds: the preprocessing step is not part of the JSON Schema.
 */
export function queryInt(min: number, max: number) {
  return z.preprocess(
    (v) => (typeof v === 'string' && INTEGER_TEXT.test(v) ? Number(v) : v),
    z
      .number({ invalid_type_error: 'must be an integer written in digits', required_error: 'is required' })
      .int()
      .min(min)
      .max(max),
  );
}
