/**
 * `npm run bench`: every cheap benchmark in one go, each figure beside a baseline measured in the
 * same run on this machine, as one table (figure, platform, baseline, ratio, goal), written to
 * docs/benchmarks.md with the machine's cores, memory and the engines used (decision 0015).
 *
 * Sections (BENCH_ONLY=<name>[,<name>] picks; default: all the cheap ones):
 *   reads     GET metadata and GET recovery-points through the REST bridge vs a plain Fastify +
 *             mongoose handler doing the same reads (bench/baselines/plain-publisher.ts)
 *   writes    POST /api/v1/publisher/sites (hosted) through the bridge vs the plain handler doing the
 *             same writes; fixed bursts on fresh pro accounts (100 hosted slots each), the engine
 *             paused meanwhile so provisioning does not compete with the requests measured
 *   layers    the metadata read one at a time through the bridge, the router (POST /graphql) and
 *             straight to the publisher subgraph (signed principal), against the plain handler:
 *             where the time goes, and the router's own overhead at p50/p99
 *   cdn       a 100 KiB public asset from {cdn_url} vs a plain static file server (baselines/static-files.ts)
 *   upload    POST /api/v1/assets/upload of BENCH_UPLOAD_MIB (64) vs a raw loopback disk write (baselines/disk-writes.ts)
 *   events    publish → consume through the platform's event bus vs a bare kafkajs producer/consumer
 *             (baselines/bare-kafka.ts), BENCH_MESSAGES (2000), 16 publishes in flight
 *   areas     the area benches that finish in seconds, run as they are (their own output, no ratio)
 * Opt-in (name them in BENCH_ONLY, or in BENCH_WITH to add them to a full run): the slow area benches in SLOW below, and `scale`
 *   (bench/read-scale.ts: the same reads at 1k/10k/100k documents).
 * Knobs: BENCH_SECONDS per round (5), BENCH_ROUNDS (2, subject and baseline alternate),
 * BENCH_CONCURRENCY (32). The docs file is written only when every default section ran
 * (or BENCH_WRITE=1).
 *
 * Run: `npm run bench` (builds, brings the engines up, then `node dist/bench/run-all.js`).
 */
// The platform's logger reads LOG_LEVEL when it is first built: quiet before anything loads.
process.env.LOG_LEVEL ??= 'warn';
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startPlatform, type Platform } from '../app/platform';
import { operationDocument } from '../app/areas';
import { loadConfig } from '../core/config';
import { PRINCIPAL_HEADER, signPrincipal } from '../core/principal';
import { type PubSub, bareKafka, publishConsume } from './baselines/bare-kafka';
import { rawLoopbackWrite } from './baselines/disk-writes';
import { startPlainPublisher } from './baselines/plain-publisher';
import { startStaticFileServer } from './baselines/static-files';
import { type LoadFigures, type LoadTarget, loadInWorker } from './load-stats';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const run = promisify(execFile);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Opt-in benches to add to a full run (the docs file is still written), e.g. BENCH_WITH=scale. */
const WITH = new Set((process.env.BENCH_WITH ?? '').split(',').filter(Boolean));
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const ROOT = path.resolve(__dirname, '..', '..');

/** The area benches cheap enough for every run, with knobs that keep each under a minute. */
const CHEAP: Record<string, Record<string, string>> = {
  latency: { BENCH_REQUESTS: '500', RATE_LIMIT_PER_MINUTE: '100000000' },
  'mail-audit': { BENCH_SECONDS: '2' },
  commerce: { BENCH_REQUESTS: '100', BENCH_SAMPLES: '1000' },
};
/** The area benches that take minutes (or gigabytes): opt-in by name in BENCH_ONLY. */
const SLOW: Record<string, string> = {
  scale: 'the metadata and list reads at 1k/10k/100k documents (bench/read-scale.ts)',
  assets: '1 GiB uploads, CDN, 20k-asset lists',
  'assets-transform': '12 MP image transforms',
  activity: '1,000 subscriptions fan-out, 10k history',
  'billing-credits': '100k ledger entries',
  'objstore-delivery': 'event delivery at 100 and 500 events/s, 50k pending claims',
  'operations-scale': 'operation claims at 1k and 50k operations',
  'mongo-wire-throughput': 'the MongoDB-wire server through mongoose',
  'mail-send': '300 messages end to end through SMTP and webhooks',
  'engines-down': 'answers while MongoDB is unreachable',
};

/** The closing note of docs/benchmarks.md: what the figures mean, and how cost grows. */
const NOTES = [
  '- Both sides of every ratio run in this one process against the same engines, alternating, so machine load',
  '  (2 cores shared with other work) hits both; the CPU ms per request (all threads of this process, the load',
  '  client included) and the MongoDB commands per request (background pollers included) are steadier than req/s.',
  '- The metadata read sends 2 MongoDB commands per request when warm (the site, its newsletter provider):',
  '  the principal is cached 5 s and looked up once per key at a time, a finished lock-holding operation and the',
  '  project are immutable and kept per process (test/perf/command-count.test.ts pins the counts). The plain',
  '  handler does the same four reads as the route did before (site, operation, project, provider).',
  '- What remains between the bridge and the plain handler is CPU in the GraphQL layers; the `c=1` rows split it:',
  '  the subgraph alone (type-graphql, the signed principal check), then the router (Apollo Server, the gateway',
  '  executing its plan and shaping the result), then the bridge (envelope). On 2 shared cores that CPU, not the',
  '  round trips, bounds req/s once the reads are down to two; the list route (20 nested items) pays it most.',
  "- The event bus's producer keeps one request in flight per broker (maxInFlightRequests: 1, so kafkajs's own",
  '  retries cannot reorder a partition); publishes that arrive while a request is on the wire go out together in',
  '  the next one (core/events/send-queue.ts, decision 0210), so 16 publishes in flight are not 16 requests in a',
  '  queue. The events row is the median of alternating rounds on fresh topics.',
  '- Upload: the bench process is mostly idle during it (profile: hashing, multipart parsing and writev are a few',
  '  per cent of samples); what separates it from the raw write is the MongoDB round trips before the first byte',
  '  (quota hold: 2) and after the last (the record and its ready state: 2; the bucket is read while the file',
  '  streams and the settle runs beside the record) — pinned by test/perf/command-count.test.ts — and the extra',
  '  stream stages, each handoff costing most on a loaded machine (decisions 0211, 0240).',
  '- POST sites: 5 MongoDB commands per create in the request on both sides (test/perf/command-count.test.ts pins',
  "  the platform's). The platform also publishes the create's event and projects it into the activity feed (about",
  '  1.4 commands more, in the background). Its inserts use insertOne (core/mongo.ts: defaults, casting and',
  '  validation without a hydrated Document, decision 0015), where the plain handler uses Model.create. The rest of',
  '  the gap is CPU in the GraphQL layers, as for the reads. The engine is paused during it, so neither side pays',
  '  for provisioning.',
  '- Scale (`BENCH_ONLY=scale`, bench/read-scale.ts): reads by _id (metadata: sites, operations, projects,',
  '  providers) stay flat as collections grow; the recovery-points list filters on projectId, which the',
  '  MongoDB-wire server answers with a full scan under a collection lock (decision 0001), so its cost grows',
  '  linearly with publisher_recovery_points. On the default engines keep collections that are listed by a',
  '  non-_id filter small (recovery points, operations, assets, mail messages) or use a real MongoDB',
  '  (MONGODB_URI), where the declared indexes answer the same lists.',
  '- At 100k documents per collection (BENCH_SCALE_SIZES=100000, filled in 553 s, load 5–9): metadata p50 53 ms',
  '  at c=1, while one recovery-points list takes 5.0 s on the platform and 5.1 s on the plain handler alike: the',
  '  scan, not the platform, is the cost. That is the point at which the default engines stop being an answer.',
];

interface Row {
  figure: string;
  subject: string;
  baseline: string;
  ratio: string;
  goal: string;
}
const rows: Row[] = [];
const rawOutputs: Array<{ name: string; output: string }> = [];
const wanted = (name: string, optIn = false) => (ONLY ? ONLY.has(name) : !optIn);

const f0 = (n: number) => n.toFixed(0);
const f1 = (n: number) => n.toFixed(1);

/** MongoDB commands sent by every client of this process (command monitoring is on in the bench's URI). */
let mongoCommands = 0;
function countCommands(conn: { getClient(): { on(event: 'commandStarted', fn: () => void): unknown } }): void {
  conn.getClient().on('commandStarted', () => mongoCommands++);
}

/** Load figures plus what each request cost this process: CPU ms (all threads) and MongoDB commands. */
interface Figures extends LoadFigures {
  cpuMs: number;
  commands: number;
}

async function measured(t: LoadTarget, concurrency = CONCURRENCY): Promise<Figures> {
  // Warm-up first (untimed), so caches and connections are in the state a steady load sees.
  await loadInWorker(t, concurrency, 0.5, 50);
  const cpu0 = process.cpuUsage();
  const cmd0 = mongoCommands;
  const f = await loadInWorker(t, concurrency, SECONDS, 0);
  const cpu = process.cpuUsage(cpu0);
  return { ...f, cpuMs: (cpu.user + cpu.system) / 1000 / f.requests, commands: (mongoCommands - cmd0) / f.requests };
}

/** Subject and baseline in alternating order, ROUNDS each; figures averaged over the rounds. */
async function sideBySide(subject: LoadTarget, baseline: LoadTarget): Promise<{ s: Figures; b: Figures }> {
  return alternating(
    () => measured(subject),
    () => measured(baseline),
  );
}

/** Two measurements in alternating order, ROUNDS each (load on the machine hits both alike); averaged. */
async function alternating(
  subject: () => Promise<Figures>,
  baseline: () => Promise<Figures>,
): Promise<{ s: Figures; b: Figures }> {
  const s: Figures[] = [];
  const b: Figures[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      s.push(await subject());
      b.push(await baseline());
    } else {
      b.push(await baseline());
      s.push(await subject());
    }
  }
  const avg = (xs: Figures[], k: keyof Figures) => xs.reduce((a, x) => a + x[k], 0) / xs.length;
  const mean = (xs: Figures[]): Figures => ({
    rps: avg(xs, 'rps'),
    p50: avg(xs, 'p50'),
    p99: avg(xs, 'p99'),
    requests: xs.reduce((a, x) => a + x.requests, 0),
    cpuMs: avg(xs, 'cpuMs'),
    commands: avg(xs, 'commands'),
  });
  return { s: mean(s), b: mean(b) };
}

function loadRows(name: string, fig: { s: Figures; b: Figures }, goals: { rps?: number; p99?: number } = {}) {
  loadRowsAt(name, fig, goals, CONCURRENCY);
}

function loadRowsAt(name: string, fig: { s: Figures; b: Figures }, goals: { rps?: number; p99?: number }, concurrency: number) {
  const { s, b } = fig;
  const ratio = s.rps / b.rps;
  rows.push({
    figure: `${name}: req/s (c=${concurrency})`,
    subject: f0(s.rps),
    baseline: f0(b.rps),
    ratio: ratio.toFixed(2),
    goal: goals.rps ? `≥ ${goals.rps} ${ratio >= goals.rps ? 'met' : 'NOT met'}` : '',
  });
  const p99 = s.p99 / b.p99;
  rows.push({
    figure: `${name}: p50 / p99 ms`,
    subject: `${f1(s.p50)} / ${f1(s.p99)}`,
    baseline: `${f1(b.p50)} / ${f1(b.p99)}`,
    ratio: `${(s.p50 / b.p50).toFixed(2)} / ${p99.toFixed(2)}`,
    goal: goals.p99 ? `p99 ≤ ${goals.p99}× ${p99 <= goals.p99 ? 'met' : 'NOT met'}` : '',
  });
  rows.push({
    figure: `${name}: CPU ms / request (process)`,
    subject: s.cpuMs.toFixed(2),
    baseline: b.cpuMs.toFixed(2),
    ratio: (s.cpuMs / b.cpuMs).toFixed(2),
    goal: '',
  });
  rows.push({
    figure: `${name}: MongoDB commands / request`,
    subject: s.commands.toFixed(2),
    baseline: b.commands.toFixed(2),
    ratio: (s.commands / b.commands).toFixed(2),
    goal: '',
  });
}

async function postJson(url: string, key: string, body: unknown): Promise<any> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function waitOperation(bridge: string, key: string, projectId: string, operationId: string): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${bridge}/api/v1/publisher/projects/${projectId}/operations/${operationId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const op = ((await res.json()) as { data?: { status: string } }).data;
    if (op?.status === 'completed') return;
    if (op?.status === 'failed' || Date.now() > until) throw new Error(`operation ${operationId}: ${JSON.stringify(op)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A running hosted site with `points` completed recovery points; returns its project id. */
export async function benchSite(platform: Platform, key: string, points: number): Promise<string> {
  const bridge = platform.bridgeUrl!;
  const created = await postJson(`${bridge}/api/v1/publisher/sites`, key, { name: 'Bench site' });
  if (created.status !== 202) throw new Error(`create site: ${JSON.stringify(created.body)}`);
  const projectId = created.body.data.project.id as string;
  await waitOperation(bridge, key, projectId, created.body.data.operation.id);
  if (points > 0) {
    const rp = await postJson(`${bridge}/api/v1/publisher/projects/${projectId}/recovery-points`, key, { reason: 'bench' });
    if (rp.status !== 202) throw new Error(`recovery point: ${JSON.stringify(rp.body)}`);
    await waitOperation(bridge, key, projectId, rp.body.data.operation.id);
    // The rest are copies of the real one (a real point takes a lifecycle operation each).
    const RecoveryPoint = platform.services.publisher.sites.models.RecoveryPoint;
    const model = await RecoveryPoint.findById(rp.body.data.recovery_point.id).lean();
    const t0 = Date.now();
    const copies = Array.from({ length: points - 1 }, (_, i) => ({
      ...model!,
      _id: `${model!._id.slice(0, 24)}${String(i).padStart(12, '0')}`,
      createdAt: new Date(t0 - (i + 1) * 60_000),
    }));
    if (copies.length) await RecoveryPoint.insertMany(copies);
  }
  return projectId;
}

async function readsSection(platform: Platform, mongodbUri: string, key: string): Promise<void> {
  const projectId = await benchSite(platform, key, 20);
  const plain = await startPlainPublisher(mongodbUri);
  countCommands(plain.conn);
  try {
    if (wanted('layers')) await layersSection(platform, plain.url, key, projectId);
    if (!wanted('reads')) return;
    const headers = { authorization: `Bearer ${key}` };
    for (const [name, suffix, goals] of [
      ['GET metadata', '/metadata', { rps: 0.8, p99: 1.5 }],
      ['GET recovery-points (20)', '/recovery-points', {}],
    ] as const) {
      const p = `/api/v1/publisher/projects/${projectId}${suffix}`;
      loadRows(
        name,
        await sideBySide({ url: `${platform.bridgeUrl}${p}`, headers }, { url: `${plain.url}${p}`, headers }),
        goals,
      );
    }
  } finally {
    await plain.close();
  }
}

/** One request at a time, so each layer's latency is its own (no queueing): bridge, router, subgraph, plain. */
async function layersSection(platform: Platform, plainUrl: string, key: string, projectId: string): Promise<void> {
  const path = `/api/v1/publisher/projects/${projectId}/metadata`;
  const auth = { authorization: `Bearer ${key}` };
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify({ query: operationDocument('publisher', 'site-metadata'), variables: { projectId } });
  const principal = await platform.services.identity.authenticate(key);
  const targets: Array<[string, () => LoadTarget]> = [
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
  const figures = new Map<string, Figures[]>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, target] of r % 2 === 0 ? targets : [...targets].reverse()) {
      figures.set(name, [...(figures.get(name) ?? []), await measured(target(), 1)]);
    }
  }
  const mean = (name: string, k: keyof Figures) => {
    const xs = figures.get(name)!;
    return xs.reduce((a, x) => a + x[k], 0) / xs.length;
  };
  const plainP50 = mean('plain handler', 'p50');
  const plainP99 = mean('plain handler', 'p99');
  const plainCpu = mean('plain handler', 'cpuMs');
  for (const [name] of targets.slice(0, 3)) {
    rows.push({
      figure: `metadata c=1 via ${name}: p50 / p99 ms, CPU ms`,
      subject: `${f1(mean(name, 'p50'))} / ${f1(mean(name, 'p99'))}, ${mean(name, 'cpuMs').toFixed(2)}`,
      baseline: `${f1(plainP50)} / ${f1(plainP99)}, ${plainCpu.toFixed(2)}`,
      ratio: `${(mean(name, 'p50') / plainP50).toFixed(2)} / ${(mean(name, 'p99') / plainP99).toFixed(2)}, ${(mean(name, 'cpuMs') / plainCpu).toFixed(2)}`,
      goal: '',
    });
  }
  await crossSubgraphOverhead(platform, key, projectId);
}

/**
 * The router's own overhead on a query that spans two subgraphs — `project(id) { name site { … } }`:
 * identity answers the project, publisher the site through `_entities` — as the router's latency
 * minus the latencies of the same two fetches sent straight to each subgraph, one at a time.
 */
async function crossSubgraphOverhead(platform: Platform, key: string, projectId: string): Promise<void> {
  const json = { 'content-type': 'application/json' };
  const principal = await platform.services.identity.authenticate(key);
  const siteFields = 'site { projectId name status runtimeVersion siteUrl domain deploymentMode mailEnabled createdAt }';
  const direct = (subgraph: string, query: string, variables: Record<string, unknown>) => (): LoadTarget => {
    const requestId = `bench-${randomBytes(6).toString('hex')}`;
    const signed = signPrincipal(principal, { audience: subgraph, requestId }, platform.config.INTERNAL_SIGNING_KEY);
    return {
      url: platform.subgraphUrls[subgraph],
      method: 'POST',
      headers: { ...json, 'x-request-id': requestId, [PRINCIPAL_HEADER]: signed },
      body: JSON.stringify({ query, variables }),
    };
  };
  const targets: Array<[string, () => LoadTarget]> = [
    [
      'router',
      () => ({
        url: platform.routerUrl!,
        method: 'POST',
        headers: { ...json, authorization: `Bearer ${key}` },
        body: JSON.stringify({
          query: `query($id: ID!) { project(id: $id) { id name createdAt ${siteFields} } }`,
          variables: { id: projectId },
        }),
      }),
    ],
    ['identity', direct('identity', 'query($id: ID!) { project(id: $id) { id name createdAt } }', { id: projectId })],
    [
      'publisher',
      direct('publisher', `query($r: [_Any!]!) { _entities(representations: $r) { ... on Project { ${siteFields} } } }`, {
        r: [{ __typename: 'Project', id: projectId }],
      }),
    ],
  ];
  const figures = new Map<string, Figures[]>();
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, target] of r % 2 === 0 ? targets : [...targets].reverse()) {
      figures.set(name, [...(figures.get(name) ?? []), await measured(target(), 1)]);
    }
  }
  const mean = (name: string, k: keyof Figures) => {
    const xs = figures.get(name)!;
    return xs.reduce((a, x) => a + x[k], 0) / xs.length;
  };
  const both = (k: 'p50' | 'p99') => mean('identity', k) + mean('publisher', k);
  rows.push({
    figure: 'cross-subgraph project+site c=1: router vs identity + publisher direct, p50 / p99 ms',
    subject: `${f1(mean('router', 'p50'))} / ${f1(mean('router', 'p99'))}`,
    baseline: `${f1(both('p50'))} / ${f1(both('p99'))}`,
    ratio: `${(mean('router', 'p50') / both('p50')).toFixed(2)} / ${(mean('router', 'p99') / both('p99')).toFixed(2)}`,
    goal: '',
  });
  rows.push({
    figure: "router's own overhead on it (router − both direct), p50 / p99 ms",
    subject: `${f1(mean('router', 'p50') - both('p50'))} / ${f1(mean('router', 'p99') - both('p99'))}`,
    baseline: '',
    ratio: '',
    goal: 'stated',
  });
}

/**
 * Creates `n` hosted sites on a fresh pro account, `concurrency` at a time, through `url`; answers
 * creates per second, latency percentiles, CPU ms and MongoDB commands per create.
 */
async function createBurst(platform: Platform, url: string, n: number, concurrency: number): Promise<Figures> {
  const { key } = await platform.services.identity.createApiKey({
    accountSlug: `bench-w-${randomBytes(4).toString('hex')}`,
    plan: 'pro',
  });
  const post = (i: number) => postJson(url, key, { name: `Bench ${i}` });
  const first = await post(-1); // warms the principal cache on both sides
  if (first.status !== 202) throw new Error(`create site: ${first.status} ${JSON.stringify(first.body).slice(0, 300)}`);
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const cmd0 = mongoCommands;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const s = performance.now();
        const res = await post(i);
        if (res.status !== 202) throw new Error(`create site: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        latencies.push(performance.now() - s);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  return {
    rps: n / seconds,
    p50: at(0.5),
    p99: at(0.99),
    requests: n,
    cpuMs: (cpu.user + cpu.system) / 1000 / n,
    commands: (mongoCommands - cmd0) / n,
  };
}

async function writesSection(platform: Platform, mongodbUri: string): Promise<void> {
  const n = Number(process.env.BENCH_CREATES ?? 90);
  const concurrency = 8;
  const plain = await startPlainPublisher(mongodbUri);
  countCommands(plain.conn);
  // Provisioning runs behind a create (simulated steps); paused for the rest of the run so that both
  // sides measure the request itself. The platform's relay still publishes each create's event.
  platform.engine.halt();
  try {
    // One unmeasured burst per side first: both measure warm code (JIT, pools), whether or not the
    // sections before this one already exercised the create path (BENCH_ONLY=writes runs it cold).
    await createBurst(platform, `${platform.bridgeUrl}/api/v1/publisher/sites`, n, concurrency);
    await createBurst(platform, `${plain.url}/api/v1/publisher/sites`, n, concurrency);
    const fig = await alternating(
      () => createBurst(platform, `${platform.bridgeUrl}/api/v1/publisher/sites`, n, concurrency),
      () => createBurst(platform, `${plain.url}/api/v1/publisher/sites`, n, concurrency),
    );
    loadRowsAt(`POST sites (${n} creates)`, fig, { rps: 0.6 }, concurrency);
  } finally {
    await plain.close();
  }
}

async function cdnSection(platform: Platform, key: string, dir: string): Promise<void> {
  const file = path.join(dir, 'small.bin');
  await writeFile(file, randomBytes(100 * 1024));
  const form = new FormData();
  form.set('visibility', 'public');
  form.set('file', new Blob([await readFile(file)]), 'small.bin');
  const res = await fetch(`${platform.bridgeUrl}/api/v1/assets/upload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const body = (await res.json()) as { data?: { url: string } };
  if (!body.data?.url) throw new Error(`upload: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  const cdnUrl = body.data.url.replace(/^https?:\/\/[^/]+/, platform.cdnUrl!);
  const plain = await startStaticFileServer(file);
  try {
    loadRows('CDN 100 KiB public asset', await sideBySide({ url: cdnUrl }, { url: plain.url }));
  } finally {
    await plain.close();
  }
}

async function uploadSection(platform: Platform, key: string, dir: string): Promise<void> {
  const mib = Number(process.env.BENCH_UPLOAD_MIB ?? 64);
  const file = path.join(dir, 'upload.bin');
  const block = randomBytes(1024 * 1024);
  const fh = await open(file, 'w');
  for (let i = 0; i < mib; i++) {
    block[0] = i & 0xff; // blocks differ, so nothing downstream can deduplicate them
    await fh.write(block);
  }
  await fh.close();
  const upload = async (i: number) => {
    const t0 = performance.now();
    const { stdout } = await run(
      'curl',
      [
        '-sS',
        '-H',
        `Authorization: Bearer ${key}`,
        '-F',
        `key=bench/upload-${i}`,
        '-F',
        `file=@${file}`,
        `${platform.bridgeUrl}/api/v1/assets/upload`,
      ],
      { maxBuffer: 1 << 20 },
    );
    if (!stdout.includes('"success":true')) throw new Error(`upload: ${stdout.slice(0, 300)}`);
    return (performance.now() - t0) / 1000;
  };
  const s: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      s.push(await upload(r));
      b.push(await rawLoopbackWrite(file, dir));
    } else {
      b.push(await rawLoopbackWrite(file, dir));
      s.push(await upload(r));
    }
  }
  const mibps = (xs: number[]) => (mib * xs.length) / xs.reduce((a, x) => a + x, 0);
  rows.push({
    figure: `upload ${mib} MiB (POST /assets/upload): MiB/s`,
    subject: f0(mibps(s)),
    baseline: f0(mibps(b)),
    ratio: (mibps(s) / mibps(b)).toFixed(2),
    goal: '',
  });
}

async function eventsSection(platform: Platform, prefix: string): Promise<void> {
  const n = Number(process.env.BENCH_MESSAGES ?? 2000);
  const bus = platform.bus;
  const platformBus: PubSub = {
    publish: (topic, key, value) => bus.publish([{ topic, key, value }]),
    async subscribe(topic, groupId, onMessage) {
      const sub = await bus.subscribe<{ i: number; at: number }>({
        groupId,
        topics: [topic],
        fromBeginning: true,
        waitForAssignment: true,
        handler: async (m) => onMessage(m.value),
      });
      return () => sub.stop();
    },
    close: async () => undefined,
  };
  const bare = await bareKafka(platform.config.kafkaBrokers);
  try {
    // Alternating rounds on fresh topics, the median round of each side (one round each was at the
    // mercy of whatever else the machine did during it).
    const ss: Array<Awaited<ReturnType<typeof publishConsume>>> = [];
    const bs: typeof ss = [];
    const rounds = Math.max(ROUNDS, 3);
    for (let r = 0; r < rounds; r++) {
      const bus1 = () => publishConsume(platformBus, `${prefix}.bench.bus${r}`, n, 16);
      const bare1 = () => publishConsume(bare, `${prefix}.bench.bare${r}`, n, 16);
      if (r % 2 === 0) {
        ss.push(await bus1());
        bs.push(await bare1());
      } else {
        bs.push(await bare1());
        ss.push(await bus1());
      }
    }
    const median = (xs: typeof ss) => [...xs].sort((x, y) => x.perSecond - y.perSecond)[Math.floor(xs.length / 2)];
    const s = median(ss);
    const b = median(bs);
    rows.push({
      figure: `events ${n} publish → consume: messages/s (median of ${rounds})`,
      subject: f0(s.perSecond),
      baseline: f0(b.perSecond),
      ratio: (s.perSecond / b.perSecond).toFixed(2),
      goal: `≥ 0.8 ${s.perSecond / b.perSecond >= 0.8 ? 'met' : 'NOT met'}`,
    });
    rows.push({
      figure: 'events publish → consume: p50 / p99 ms',
      subject: `${f1(s.p50)} / ${f1(s.p99)}`,
      baseline: `${f1(b.p50)} / ${f1(b.p99)}`,
      ratio: `${(s.p50 / b.p50).toFixed(2)} / ${(s.p99 / b.p99).toFixed(2)}`,
      goal: '',
    });
  } finally {
    await bare.close();
  }
}

async function areaBench(name: string, env: Record<string, string>): Promise<void> {
  const t0 = performance.now();
  try {
    const { stdout } = await run(process.execPath, [path.join(ROOT, 'dist', 'bench', `${name}.js`)], {
      env: { ...process.env, ...env },
      maxBuffer: 16 << 20,
      timeout: 5 * 60_000,
    });
    rawOutputs.push({ name: `${name} (${f0((performance.now() - t0) / 1000)} s)`, output: stdout.trim() });
  } catch (e) {
    rawOutputs.push({ name: `${name} FAILED`, output: String((e as Error).message).slice(0, 2000) });
  }
  console.log(`== ${rawOutputs.at(-1)!.name}\n${rawOutputs.at(-1)!.output}`);
}

async function engines(platform: Platform): Promise<string[]> {
  const lines: string[] = [];
  try {
    const info = await platform.conn.db!.admin().command({ buildInfo: 1 });
    lines.push(
      `MongoDB-wire server at ${platform.config.mongodbUri.replace(/\/\/[^@]*@/, '//').replace(/\/[^/]*$/, '')} reporting version ${info.version}`,
    );
  } catch {
    lines.push('MongoDB-wire server: buildInfo not answered');
  }
  lines.push(`Kafka brokers ${platform.config.kafkaBrokers.join(',')} (kafkajs 2.2.4 client)`);
  return lines;
}

function table(): string {
  const head = ['figure', 'platform', 'baseline', 'ratio', 'goal'];
  const body = rows.map((r) => [r.figure, r.subject, r.baseline, r.ratio, r.goal]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

/**
 * Starts the platform, trying again (up to 3 times) when the engines do not answer within the
 * platform's short server-selection timeout: on a loaded machine the first connection can miss it.
 */
export async function startPatiently<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (e) {
      if (attempt >= 3 || !/Server selection timed out|ECONNREFUSED|KafkaJS/i.test(String(e))) throw e;
      console.error(`engines did not answer in time (${(e as Error).message.slice(0, 80)}); starting again`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  // Command monitoring on: the table counts MongoDB commands per request (background work included).
  const dbUri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`);
  const mongodbUri = `${dbUri}${dbUri.includes('?') ? '&' : '?'}monitorCommands=true`;
  const blobs = path.join(os.tmpdir(), `bench-blobs-${id}`);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
    MONGODB_URI: mongodbUri,
    ASSETS_BLOB_DIR: blobs,
  });
  const platform = await startPatiently(() =>
    startPlatform({
      config,
      bridgePort: 0,
      routerPort: 0,
      cdnPort: 0,
      subgraphBasePort: 0,
      // A free port unless EDGE_PORT names one: another platform on the machine may hold the default.
      edgePort: process.env.EDGE_PORT ? undefined : 0,
      topicPrefix: `bench${id}`,
    }),
  );
  countCommands(platform.conn);
  let engineLines: string[] = [];
  try {
    engineLines = await engines(platform);
    const created = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    if (wanted('reads') || wanted('layers')) await readsSection(platform, mongodbUri, created.key);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-'));
    try {
      if (wanted('cdn')) await cdnSection(platform, created.key, dir);
      if (wanted('upload')) await uploadSection(platform, created.key, dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    if (wanted('events')) await eventsSection(platform, `bench${id}`);
    // Last: it pauses the operation engine for good (the sites it creates are never provisioned).
    if (wanted('writes')) await writesSection(platform, mongodbUri);
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
    await rm(blobs, { recursive: true, force: true });
  }
  for (const [name, env] of Object.entries(CHEAP)) if (wanted('areas') || ONLY?.has(name)) await areaBench(name, env);
  for (const name of Object.keys(SLOW)) {
    if (!ONLY?.has(name) && !WITH.has(name)) continue;
    await areaBench(name === 'scale' ? 'read-scale' : name, {});
  }

  const seconds = (performance.now() - started) / 1000;
  const machine = [
    `${os.cpus().length} cores (${os.cpus()[0]?.model.trim() ?? 'unknown'}), ${f1(os.totalmem() / 1024 ** 3)} GiB memory, load average ${os.loadavg().map(f1).join(' ')} at the end`,
    `node ${process.version}, ${os.type()} ${os.release()}`,
    ...engineLines,
  ];
  const out = table();
  console.log(`\n${out}\n\n${machine.join('\n')}\nwhole run ${f0(seconds)} s`);
  if (!ONLY || process.env.BENCH_WRITE === '1') {
    const doc = [
      '# Benchmarks',
      '',
      `Written by \`npm run bench\` (bench/run-all.ts) on ${new Date().toISOString()}, whole run ${f0(seconds)} s.`,
      `Each platform figure and its baseline were measured in the same run, alternating, ${ROUNDS} rounds of ${SECONDS} s at`,
      `concurrency ${CONCURRENCY}, the client in a worker thread; the ratio is platform / baseline (req/s: higher is better;`,
      'latency: lower is better). The machine is shared, so absolute figures are noisy; the ratios are what to compare.',
      '',
      '## Machine',
      '',
      ...machine.map((l) => `- ${l}`),
      '',
      '## Figures',
      '',
      out,
      '',
      '## Area benchmarks run as they are',
      '',
      ...rawOutputs.flatMap((o) => [`### ${o.name}`, '', '```', o.output, '```', '']),
      '## Notes',
      '',
      ...NOTES,
      '',
      '## Opt-in (BENCH_ONLY=<name>, or BENCH_WITH=<name> beside the full run)',
      '',
      ...Object.entries(SLOW).map(([n, what]) => `- \`${n}\`: ${what}`),
      '',
    ].join('\n');
    await writeFile(path.join(ROOT, 'docs', 'benchmarks.md'), doc);
    console.log('wrote docs/benchmarks.md');
  }
  process.exit(0);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
