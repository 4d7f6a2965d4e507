import { Counter, Histogram } from 'prom-client';

/** What both edge engines share (dataplane/edge.ts): the route shape, the host key and the counters. */

export type EdgeEngineName = 'node' | 'nginx';

/** `EDGE_ENGINE` (`nginx` or `node`), else nginx (which falls back to node where no nginx runs: `chooseEdgeEngine`). */
export function edgeEngineFromEnv(env: NodeJS.ProcessEnv = process.env): EdgeEngineName {
  const v = (env.EDGE_ENGINE ?? '').trim().toLowerCase();
  if (v === '') return 'nginx';
  if (v === 'node' || v === 'nginx') return v;
  throw new Error(`EDGE_ENGINE must be nginx or node (got ${JSON.stringify(env.EDGE_ENGINE)})`);
}

/**
 * `sleeping`: the workload was stopped for being idle (dataplane/sleep.ts); the edge holds a request
 * for it while it wakes, then forwards it (the Node side does, whichever engine serves).
 */
export type RouteState = 'running' | 'stopped' | 'restoring' | 'sleeping';

export interface EdgeRoute {
  /** Where the workload listens: a sandboxed one on its unix socket (`socketPath`), else host and port. */
  target: { host: string; port: number; socketPath?: string };
  state: RouteState;
  /** Who the route belongs to (a site id), for logs and metrics. */
  owner?: string;
}

/** One request the edge answered, as an `observe` listener may be told it (the nginx engine tells it always). */
export interface EdgeAccess {
  host: string;
  status: number;
  /** From the request's first byte to the answer's last, in ms. */
  ms: number;
}

const edgeRequests = new Counter({
  name: 'edge_requests_total',
  help: 'Requests the edge answered, by outcome.',
  labelNames: ['outcome'] as const,
});
/** The counter's children, looked up once instead of by label on every request. */
export const counted = {
  proxied: edgeRequests.labels('proxied'),
  upstream_error: edgeRequests.labels('upstream_error'),
  unknown_host: edgeRequests.labels('unknown_host'),
  unavailable: edgeRequests.labels('unavailable'),
  bad_request: edgeRequests.labels('bad_request'),
};
/** Sleep and wake (dataplane/sleep.ts) as the edge's `/metrics` shows them. */
export const sleepMetrics = {
  sleeps: new Counter({ name: 'edge_sleeps_total', help: 'Workloads put to sleep, by why.', labelNames: ['reason'] as const }),
  wakes: new Counter({ name: 'edge_wakes_total', help: 'Workloads woken, by outcome.', labelNames: ['outcome'] as const }),
  wakeSeconds: new Histogram({
    name: 'edge_wake_seconds',
    help: 'From the start of a wake to the woken workload answering its probe.',
    buckets: [0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 30],
  }),
  held: new Counter({
    name: 'edge_held_requests_total',
    help: 'Requests (and websocket upgrades) the edge held while their workload woke, by how they ended.',
    labelNames: ['outcome'] as const,
  }),
};

export const cookiesDropped = new Counter({
  name: 'edge_set_cookie_dropped_total',
  help: "Set-Cookie headers of a workload the edge dropped because their Domain is wider than the request's host.",
});

/** The host name of a `Host` header: lower case, without port or trailing dot. */
export function hostKey(hostHeader: string | undefined): string {
  if (!hostHeader) return '';
  let h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) h = h.slice(0, h.indexOf(']') + 1);
  else if (h.includes(':')) h = h.slice(0, h.lastIndexOf(':'));
  return h.endsWith('.') ? h.slice(0, -1) : h;
}
