import type { GraphQLScalarSerializer } from 'graphql';

/**
 * The `DateTimeISO` scalar's answer for a Date, written from its UTC fields: the very string
 * `Date.prototype.toISOString` answers for years 0–9999, in about half its time (decision 0314).
 * Other years, invalid dates and values that are not Dates go to the scalar's own serializer, so
 * its answers and its errors stay as they were.
 */
export const isoDates = { enabled: true };

const two = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const three = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);
const four = (n: number) => (n < 10 ? `000${n}` : n < 100 ? `00${n}` : n < 1000 ? `0${n}` : `${n}`);

/** `date.toISOString()` for a valid Date of years 0–9999; undefined for any other. */
export function isoString(date: Date): string | undefined {
  const year = date.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) return undefined; // NaN too: an invalid Date
  return (
    `${four(year)}-${two(date.getUTCMonth() + 1)}-${two(date.getUTCDate())}` +
    `T${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())}.${three(date.getUTCMilliseconds())}Z`
  );
}

/** A `DateTimeISO` serializer that writes Dates with `isoString` and leaves the rest to `serialize`. */
export function isoDateSerializer(serialize: GraphQLScalarSerializer<unknown>): GraphQLScalarSerializer<unknown> {
  return (value) => {
    if (isoDates.enabled && value instanceof Date) {
      const written = isoString(value);
      if (written !== undefined) return written;
    }
    return serialize(value);
  };
}
