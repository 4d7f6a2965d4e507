import { randomBytes } from 'node:crypto';
import { open, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Platform } from '../app/platform';
import { PRINCIPAL_HEADER, signPrincipal } from '../core/principal';
import { type PubSub, bareKafka, publishConsume } from './baselines/bare-kafka';
import { rawLoopbackWrite } from './baselines/disk-writes';
import { startPlainPublisher } from './baselines/plain-publisher';
import { startStaticFileServer } from './baselines/static-files';
import {
  ROUNDS,
  alternating,
  benchSite,
  commandsSoFar,
  gcSoFar,
  type Figures,
  f0,
  f1,
  loadRows,
  loadRowsAt,
  meansOfSerial,
  postJson,
  rows,
  run,
  sideBySide,
  wanted,
} from './bench-kit';
import type { LoadTarget } from './load-stats';
import { layerTargets, readPathSection } from './read-path';

/** The measured sections of `npm run bench` (bench/run-all.ts describes each and runs them in order). */

export async function readsSection(platform: Platform, mongodbUri: string, key: string): Promise<void> {
  const projectId = await benchSite(platform, key, 20);
  const plain = await startPlainPublisher(mongodbUri);
  try {
    if (wanted('layers')) await layersSection(platform, plain.url, key, projectId);
    if (wanted('path')) await readPathSection(platform, plain.url, key, projectId);
    if (!wanted('reads')) return;
    const headers = { authorization: `Bearer ${key}` };
    for (const [name, suffix, goals] of [
      ['GET metadata', '/metadata', { rps: 0.9, p99: 1.5 }],
      ['GET recovery-points (20)', '/recovery-points', { rps: 0.8 }],
    ] as const) {
      const p = `/api/v1/publisher/projects/${projectId}${suffix}`;
      loadRows(
        name,
        await sideBySide({ url: `${platform.bridgeUrl}${p}`, headers }, { url: `${plain.url}${p}`, headers }),
        goals,
      );
    }
    await listWithoutReads(platform, plain.url, key, projectId);
  } finally {
    await plain.close();
  }
}

/**
 * What the list costs without its reads: the same route with the service's answer (the site and its
 * 20 points) kept in memory, against the plain handler doing its two reads. When the platform without
 * reads is no faster than the plain handler with them, the gap is the GraphQL layers' CPU, not MongoDB.
 */
async function listWithoutReads(platform: Platform, plainUrl: string, key: string, projectId: string): Promise<void> {
  const sites = platform.services.publisher.sites;
  const principal = await platform.services.identity.authenticate(key);
  const views = await sites.listRecoveryPoints(principal, projectId);
  const read = sites.listRecoveryPoints;
  sites.listRecoveryPoints = async () => views;
  try {
    const p = `/api/v1/publisher/projects/${projectId}/recovery-points`;
    const headers = { authorization: `Bearer ${key}` };
    loadRows(
      'GET recovery-points (20), platform without its reads',
      await sideBySide({ url: `${platform.bridgeUrl}${p}`, headers }, { url: `${plainUrl}${p}`, headers }),
    );
  } finally {
    sites.listRecoveryPoints = read;
  }
}

/** One request at a time, so each layer's latency is its own (no queueing): bridge, router, subgraph, plain. */
async function layersSection(platform: Platform, plainUrl: string, key: string, projectId: string): Promise<void> {
  for (const [name, suffix, operation] of [
    ['metadata', '/metadata', 'site-metadata'],
    ['recovery-points (20)', '/recovery-points', 'recovery-points'],
  ] as const) {
    await layersOf(platform, plainUrl, key, projectId, name, suffix, operation);
  }
  await crossSubgraphOverhead(platform, key, projectId);
}

async function layersOf(
  platform: Platform,
  plainUrl: string,
  key: string,
  projectId: string,
  name: string,
  suffix: string,
  operation: string,
): Promise<void> {
  const targets = await layerTargets(platform, plainUrl, key, projectId, suffix, operation);
  const mean = await meansOfSerial(targets);
  const plainP50 = mean('plain handler', 'p50');
  const plainP99 = mean('plain handler', 'p99');
  const plainCpu = mean('plain handler', 'cpuMs');
  for (const [via] of targets.slice(0, 3)) {
    rows.push({
      figure: `${name} c=1 via ${via}: p50 / p99 ms, CPU ms`,
      subject: `${f1(mean(via, 'p50'))} / ${f1(mean(via, 'p99'))}, ${mean(via, 'cpuMs').toFixed(2)}`,
      baseline: `${f1(plainP50)} / ${f1(plainP99)}, ${plainCpu.toFixed(2)}`,
      ratio: `${(mean(via, 'p50') / plainP50).toFixed(2)} / ${(mean(via, 'p99') / plainP99).toFixed(2)}, ${(mean(via, 'cpuMs') / plainCpu).toFixed(2)}`,
      goal: '',
    });
  }
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
  const mean = await meansOfSerial(targets);
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
  const cmd0 = commandsSoFar();
  const gc0 = gcSoFar();
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
    commands: (commandsSoFar() - cmd0) / n,
    gcMs: (gcSoFar() - gc0) / n,
  };
}

export async function writesSection(platform: Platform, mongodbUri: string): Promise<void> {
  const n = Number(process.env.BENCH_CREATES ?? 90);
  const concurrency = 8;
  const plain = await startPlainPublisher(mongodbUri);
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

export async function cdnSection(platform: Platform, key: string, dir: string): Promise<void> {
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

export async function uploadSection(platform: Platform, key: string, dir: string): Promise<void> {
  const mib = Number(process.env.BENCH_UPLOAD_MIB ?? 64);
  const file = path.join(dir, 'upload.bin');
  const block = randomBytes(1024 * 1024);
  const fh = await open(file, 'w');
  for (let i = 0; i < mib; i++) {
    block[0] = i & 0xff; // blocks differ, so nothing downstream can deduplicate them
    await fh.write(block);
  }
  await fh.close();
  /**
   * Each round sends other bytes (its number in the file's first 8 bytes, both sides the same file),
   * so every upload stores a new blob as a user's new file does, not a copy of one already stored.
   */
  const renumber = async (i: number) => {
    const h = await open(file, 'r+');
    const head = Buffer.alloc(8);
    head.writeDoubleBE(i);
    await h.write(head, 0, 8, 1);
    await h.close();
  };
  const upload = async (i: number) => {
    await renumber(i);
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
  // One unmeasured round per side first: both measure warm code (the account's counter and default
  // bucket exist, as for every upload after an account's first). Then at least 4 alternating rounds
  // and the median round of each side: one round stalled by the shared machine moves a mean of 2
  // rounds by more than the gap measured (decision 0255).
  await upload(-1);
  await rawLoopbackWrite(file, dir);
  const rounds = Math.max(ROUNDS, 4);
  const s: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      s.push(await upload(r));
      b.push(await rawLoopbackWrite(file, dir));
    } else {
      b.push(await rawLoopbackWrite(file, dir));
      s.push(await upload(r));
    }
  }
  const mibps = (xs: number[]) => mib / [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  rows.push({
    figure: `upload ${mib} MiB (POST /assets/upload): MiB/s (median of ${rounds})`,
    subject: f0(mibps(s)),
    baseline: f0(mibps(b)),
    ratio: (mibps(s) / mibps(b)).toFixed(2),
    goal: `≥ 0.8 ${mibps(s) / mibps(b) >= 0.8 ? 'met' : 'NOT met'}`,
  });
}

export async function eventsSection(platform: Platform, prefix: string): Promise<void> {
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
