import { randomBytes } from 'node:crypto';
import type { Platform } from '../app/platform';
import { operationDocument } from '../app/areas';
import { PRINCIPAL_HEADER, signPrincipal } from '../core/principal';
import { isoDates } from '../core/graphql-dates';
import { singleFetchPath } from '../router/single-fetch';
import { compiledExecution } from '../core/compiled-execution';
import { fixedCacheControl } from '../core/subgraph-server';
import { ROUNDS, measured, rows } from './bench-kit';
import type { LoadTarget } from './load-stats';

/**
 * The read path's changes (decisions 0313, 0314, 0345), each alone and all together, in the same
 * run: CPU ms per request at c=1 of the metadata read and the 20-point list at each layer, with the
 * router's single-fetch path, the subgraphs' ISO date writer, their compiled execution and their
 * fixed cache-control header switched off (before) and on. The switches are the process's own
 * (`singleFetchPath`, `isoDates`, `compiledExecution`, `fixedCacheControl`); they are set right
 * before each measurement.
 */
const OFF = { singleFetch: false, dates: false, jit: false, cacheControl: false };
const VARIANTS = {
  before: OFF,
  'single fetch': { ...OFF, singleFetch: true },
  'ISO dates': { ...OFF, dates: true },
  jit: { ...OFF, jit: true },
  'fixed cache-control': { ...OFF, cacheControl: true },
  all: { singleFetch: true, dates: true, jit: true, cacheControl: true },
} as const;
type Variant = keyof typeof VARIANTS;
const ALL_VARIANTS = Object.keys(VARIANTS) as Variant[];
/** The subgraph over HTTP has no router in front, and only it has Apollo Server's cache-control plugin. */
const SUBGRAPH_VARIANTS: Variant[] = ['before', 'ISO dates', 'jit', 'fixed cache-control', 'all'];

function setSwitches(v: (typeof VARIANTS)[Variant]): void {
  singleFetchPath.enabled = v.singleFetch;
  isoDates.enabled = v.dates;
  compiledExecution.enabled = v.jit;
  fixedCacheControl.enabled = v.cacheControl;
}

function switched(variant: Variant, target: () => LoadTarget): () => LoadTarget {
  return () => {
    setSwitches(VARIANTS[variant]);
    return target();
  };
}

/** The metadata or list read at each layer: bridge (REST), router (POST /graphql), the publisher subgraph, the plain handler. */
export async function layerTargets(
  platform: Platform,
  plainUrl: string,
  key: string,
  projectId: string,
  suffix: string,
  operation: string,
): Promise<Array<[string, () => LoadTarget]>> {
  const path = `/api/v1/publisher/projects/${projectId}${suffix}`;
  const auth = { authorization: `Bearer ${key}` };
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify({ query: operationDocument('publisher', operation), variables: { projectId } });
  const principal = await platform.services.identity.authenticate(key);
  return [
    ['bridge (REST)', () => ({ url: `${platform.bridgeUrl}${path}`, headers: auth })],
    ['router (POST /graphql)', () => ({ url: platform.routerUrl!, method: 'POST', headers: { ...auth, ...json }, body })],
    [
      'publisher subgraph',
      () => {
        // Signed as the router does; valid 30 s for this request id, so signed again per round.
        const requestId = `bench-${randomBytes(6).toString('hex')}`;
        const signed = signPrincipal(principal, { audience: 'publisher', requestId }, platform.config.INTERNAL_SIGNING_KEY);
        return {
          url: platform.subgraphUrls.publisher,
          method: 'POST',
          headers: { ...json, 'x-request-id': requestId, [PRINCIPAL_HEADER]: signed },
          body,
        };
      },
    ],
    ['plain handler', () => ({ url: `${plainUrl}${path}`, headers: auth })],
  ];
}

/**
 * One request at a time, every target once per round (alternating order), at least 3 rounds; the
 * least CPU per request of each target's rounds: on a shared machine a round's CPU per request only
 * grows with what else runs (slower requests carry more of the process's background work).
 */
async function leastOfSerial(targets: Array<[string, () => LoadTarget]>): Promise<(name: string, k: 'cpuMs') => number> {
  const least = new Map<string, number>();
  for (let r = 0; r < Math.max(ROUNDS, 3); r++) {
    for (const [name, target] of r % 2 === 0 ? targets : [...targets].reverse()) {
      const { cpuMs } = await measured(target(), 1);
      least.set(name, Math.min(least.get(name) ?? Infinity, cpuMs));
    }
  }
  return (name) => least.get(name)!;
}

export async function readPathSection(platform: Platform, plainUrl: string, key: string, projectId: string): Promise<void> {
  try {
    for (const [name, suffix, operation] of [
      ['metadata', '/metadata', 'site-metadata'],
      ['recovery-points (20)', '/recovery-points', 'recovery-points'],
    ] as const) {
      const layers = (await layerTargets(platform, plainUrl, key, projectId, suffix, operation)).slice(0, 3);
      const targets: Array<[string, () => LoadTarget]> = [];
      for (const [via, target] of layers) {
        const variants = via === 'publisher subgraph' ? SUBGRAPH_VARIANTS : ALL_VARIANTS;
        for (const v of variants) targets.push([`${via}|${v}`, switched(v, target)]);
      }
      const mean = await leastOfSerial(targets);
      for (const [via] of layers) {
        const before = mean(`${via}|before`, 'cpuMs');
        const after = (via === 'publisher subgraph' ? SUBGRAPH_VARIANTS : ALL_VARIANTS).slice(1);
        rows.push({
          figure: `${name} c=1 via ${via}: least CPU ms before → ${after.join(' / ')}`,
          subject: after.map((v) => mean(`${via}|${v}`, 'cpuMs').toFixed(2)).join(' / '),
          baseline: before.toFixed(2),
          ratio: after.map((v) => (mean(`${via}|${v}`, 'cpuMs') / before).toFixed(2)).join(' / '),
          goal: 'stated',
        });
      }
    }
  } finally {
    // The process's defaults again for the sections after this one (all on: decisions 0313, 0314, 0345).
    setSwitches(VARIANTS.all);
  }
}
