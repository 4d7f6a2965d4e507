import { PlatformError } from '../../../core/errors';

/**
 * Revisions guard buckets and assets (spec 9.4): the record's `revision` goes out as `ETag` and
 * comes back in `If-Match`. Sent quoted (`"3"`, RFC 9110); taken back quoted or bare, weak or not.
 */
export const etagOf = (revision: number): string => `"${revision}"`;

/** A route's `headers`: the answer's revision as `ETag`, when it carries one (docs/contracts.md). */
export const revisionHeader = (payload: unknown): Record<string, string> => {
  const rev = (payload as { revision?: number } | null)?.revision;
  return typeof rev === 'number' ? { ETag: etagOf(rev) } : {};
};

export const preconditionRequired = () =>
  new PlatformError('assets.precondition_required', 428, 'this change needs an If-Match header with the current revision');
export const revisionStale = (current?: number) =>
  new PlatformError(
    'assets.revision_mismatch',
    412,
    'the revision in If-Match is not the current one',
    current === undefined ? {} : { current_revision: current },
  );

/** The revision an `If-Match` header names: 428 when absent, 412 when it names none. */
export function requiredRevision(ifMatch: string | null | undefined): number {
  if (ifMatch === undefined || ifMatch === null || ifMatch.trim() === '') throw preconditionRequired();
  const m = /^(?:W\/)?"?(\d{1,15})"?$/.exec(ifMatch.trim());
  if (!m) throw revisionStale();
  return Number(m[1]);
}
