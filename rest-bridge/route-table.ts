import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { projectRoot } from '../core/paths';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** Which envelope an area answers with (spec 1.4–1.5). */
export type EnvelopeKind = 'standard' | 'commerce';

export interface RouteRequest<B = unknown, Q = Record<string, unknown>> {
  params: Record<string, string>;
  query: Q;
  body: B;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One documented REST route: parse and validate the HTTP request, run one fixed GraphQL operation,
 * wrap what it selects in the area's envelope.
 */
export interface RouteDef<B = unknown, Q = Record<string, unknown>> {
  method: HttpMethod;
  /** OpenAPI-style path, e.g. `/api/v1/publisher/projects/{projectID}/metadata`. */
  path: string;
  summary: string;
  tag: string;
  /** `<area>/<name>`: the `.graphql` document under rest-bridge/operations/. */
  operation: string;
  /** Strict schema of the JSON body (unknown fields are errors); absent = no body expected. */
  body?: z.ZodType<B>;
  /** Schema of the query string. */
  query?: z.ZodType<Q>;
  variables: (req: RouteRequest<B, Q>) => Record<string, unknown>;
  /** Picks the payload out of the operation's `data`. */
  select: (data: Record<string, unknown>) => unknown;
  /** HTTP status of a success. */
  status: 200 | 201 | 202 | 204;
  envelope: EnvelopeKind;
  /** Largest accepted JSON body in bytes (default 1 MiB). */
  bodyLimit?: number;
}

const OPERATIONS_DIR = path.join(projectRoot(), 'rest-bridge', 'operations');
const documents = new Map<string, string>();

/**
 * The operation's document with the fragments it spreads appended (from `_fragments.graphql` of
 * its area), read once.
 */
export function operationDocument(name: string): string {
  const cached = documents.get(name);
  if (cached) return cached;
  const [area] = name.split('/');
  const text = readFileSync(path.join(OPERATIONS_DIR, `${name}.graphql`), 'utf8');
  const fragmentsFile = path.join(OPERATIONS_DIR, area, '_fragments.graphql');
  const fragments = readdirSync(path.dirname(fragmentsFile)).includes('_fragments.graphql')
    ? splitFragments(readFileSync(fragmentsFile, 'utf8'))
    : new Map<string, string>();
  const needed = new Set<string>();
  const visit = (src: string) => {
    for (const m of src.matchAll(/\.\.\.\s*([A-Za-z_]\w*)/g)) {
      if (!needed.has(m[1]) && fragments.has(m[1])) {
        needed.add(m[1]);
        visit(fragments.get(m[1])!);
      }
    }
  };
  visit(text);
  const doc = [text, ...[...needed].map((n) => fragments.get(n)!)].join('\n');
  documents.set(name, doc);
  return doc;
}

function splitFragments(source: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const chunk of source.split(/(?=^fragment\s)/m)) {
    const m = /^fragment\s+(\w+)/.exec(chunk.trim());
    if (m) out.set(m[1], chunk.trim());
  }
  return out;
}

/** `{projectID}` → `:projectID` for the HTTP router. */
export const toFastifyPath = (p: string): string => p.replace(/\{(\w+)\}/g, ':$1');
