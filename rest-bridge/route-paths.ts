import type { AnyRoute, EnvelopeKind } from '../core/rest-route';

/** `{projectID}` → `:projectID` for the HTTP router. */
export const toFastifyPath = (p: string): string => p.replace(/\{(\w+)\}/g, ':$1');

/**
 * Which envelope a path answers with when no route matched it (404s, parse errors): the envelope of
 * the route rows sharing the most leading segments with it, so an area's own rows decide, never a
 * hard-coded prefix.
 */
export function envelopeResolver(routes: readonly Pick<AnyRoute, 'path' | 'envelope'>[]): (url: string) => EnvelopeKind {
  const rows = routes.map((r) => ({ segments: r.path.split('/').filter(Boolean), envelope: r.envelope }));
  return (url) => {
    const segments = url.split('?')[0].split('/').filter(Boolean);
    let best: EnvelopeKind = 'standard';
    let bestScore = 0;
    for (const row of rows) {
      let score = 0;
      while (
        score < row.segments.length &&
        score < segments.length &&
        (row.segments[score] === segments[score] || /^\{\w+\}$/.test(row.segments[score]))
      ) {
        score++;
      }
      // A match must reach past the shared `/api/v1/projects/{id}` stem into the area's own words.
      const literal = row.segments.slice(0, score).filter((s) => !s.startsWith('{')).length;
      if (score > bestScore && literal >= 3) {
        best = row.envelope;
        bestScore = score;
      }
    }
    return best;
  };
}
