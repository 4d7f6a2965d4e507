/**
 * A sleeping Ghost site's wake (docs/decisions/0335-ghost-wake-time.md): one real Ghost site, started
 * and configured once (its database migrated), then BENCH_WAKES times stopped (`SiteHost.stop`, a
 * clean SIGTERM) and started again (`SiteHost.resume`), timed from the resume to the first 200 of
 * `GET /` through the edge (goal: p95 ≤ 4 s on the 2-core machine). Then one more start of the same
 * files with Ghost's boot debug on, its phases from the process's spawn: when Ghost's boot begins,
 * when it listens (maintenance answers), when the database is ready (migrations checked), when the
 * URL service is ready, when it has booted, when the probe first passes, the first 200.
 *
 * Run: `npm run -s build && node dist/bench/ghost-wake.js` (BENCH_WAKES, 20; BENCH_SITE_CONFIG, a
 * JSON object of extra site configuration (environment), e.g. `{"NODE_OPTIONS":"--max-semi-space-size=16"}`).
 * To measure one change alone on a loaded machine: BENCH_COMPARE_CONFIG (extra configuration of a
 * second site, e.g. `{"PLATFORM_RESOLVE_CACHE":"off","PLATFORM_MINIFY_CACHE":"off"}` for the boot
 * caches of decision 0405, or `{"PLATFORM_COMPILE_CACHE":""}` for none) and/or BENCH_AT_WAKE (a
 * shell command started beside each of its wakes, e.g. a read-ahead of the runtime) add a second site, and the two take turns; BENCH_BEFORE_WAKE, a shell
 * command run before every wake (e.g. one that evicts the runtime from the page cache). Runs sandboxed when the sandbox can be set up
 * (as root here). Needs the Ghost release in the runtime cache (a first run installs it: minutes).
 */
import { execSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { requestLocal } from '../core/outbound-http';
import { Edge } from '../dataplane/edge';
import { RuntimeCache } from '../dataplane/runtime-cache';
import { type HostedSite, SiteHost } from '../dataplane/sites';
import { Supervisor } from '../dataplane/supervisor';

const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};

/** Ghost's boot lines the breakdown shows (its `ghost:boot` debug and its info log), in boot order. */
const PHASES: [label: string, line: RegExp][] = [
  ['boot begins (index.js loaded)', /ghost:boot Begin Boot/],
  ['config and logging loaded', /ghost:boot End: Load logging/],
  ['listening (maintenance 503s)', /ghost:boot End: load server \+ minimal app/],
  ['database ready (migrations checked)', /ghost:boot End: Get DB ready/],
  ['core loaded (models, settings)', /ghost:boot End: initCore/],
  ['frontend services (themes, routes)', /ghost:boot End: initServicesForFrontend/],
  ['express apps loaded', /ghost:boot End: initExpressApps/],
  ['services initialised', /ghost:boot End: initServices$/],
  ['booted (app mounted)', /Ghost booted in/],
  ['URL service ready (maintenance off)', /URL Service ready in/],
];

/**
 * CPU seconds the site's processes have used so far (`/proc/<pid>/stat` utime + stime, all threads,
 * at the usual 100 ticks a second): every process of its sandbox (its memory cgroup), else its own
 * process. Read just before a stop, it is the whole run's (boot and first page), whatever the
 * machine's load.
 */
function siteCpuSeconds(sup: Supervisor, id: string): number {
  const st = sup.status(id);
  const pids = sup.sandbox
    ? readFileSync(path.join(sup.sandbox.memoryGroup(id), 'cgroup.procs'), 'utf8')
        .split('\n')
        .filter(Boolean)
    : st?.pid
      ? [String(st.pid)]
      : [];
  let ticks = 0;
  for (const pid of pids) {
    try {
      // After the name: utime and stime are fields 14 and 15 (1-based), i.e. indexes 11 and 12 here.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /, '')
        .split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Nearest-rank percentile of an ascending list. */
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/**
 * Polls `GET /` through the edge every 5 ms until it answers 200; answers when (performance.now())
 * and what the requests answered before (status and ms each).
 */
async function firstOk(edgePort: number, host: string): Promise<{ at: number; tries: string[] }> {
  const tries: string[] = [];
  for (;;) {
    const t = performance.now();
    const r = await requestLocal(edgePort, { headers: { host }, timeoutMs: 30_000 }).catch(() => null);
    tries.push(`${r?.status ?? 'error'} in ${Math.round(performance.now() - t)} ms`);
    if (r?.status === 200) return { at: performance.now(), tries };
    await sleep(5);
  }
}

interface Variant {
  site: HostedSite;
  /** A shell command started beside each of its wakes. */
  atWake?: string;
  total: number[];
  probe: number[];
  cpu: number[];
}

async function main(): Promise<void> {
  const wakes = Math.max(1, Number(process.env.BENCH_WAKES ?? 20));
  const extra = JSON.parse(process.env.BENCH_SITE_CONFIG ?? '{}') as Record<string, string>;
  const compare = process.env.BENCH_COMPARE_CONFIG;
  const before = process.env.BENCH_BEFORE_WAKE;
  const atWake = process.env.BENCH_AT_WAKE;
  const cache = new RuntimeCache();
  const sup = new Supervisor();
  const edge = new Edge({ port: 0 });
  const sitesRoot = mkdtempSync(path.join(tmpdir(), 'bench-wake-'));
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  try {
    await edge.listen();
    const variant = (siteId: string, config: Record<string, string>, beside?: string): Variant => {
      const host = `${siteId}.sites.localhost:${edge.port}`;
      const site = { siteId, runtime: GHOST, url: `http://${host}/`, hosts: [host], memoryMb: 512, config };
      return { site, atWake: beside, total: [], probe: [], cpu: [] };
    };
    const variants = [variant('wake', extra)];
    if (compare !== undefined || atWake) variants.push(variant('wake-b', { ...extra, ...JSON.parse(compare ?? '{}') }, atWake));
    for (const v of variants) {
      await sites.start(v.site);
      await firstOk(edge.port, v.site.hosts[0]);
      await sites.configure(v.site.siteId, { name: 'Wake', email: 'wake@example.test', title: 'Wake' });
      await sites.stop(v.site.siteId);
    }
    console.log(`Ghost ${GHOST.version}, ${sup.sandbox ? 'sandboxed' : 'not sandboxed'}, Node ${process.version}`);
    for (let i = 0; i < wakes; i++) {
      // Two variants take turns, each first every other round: neither always meets the warmer machine.
      for (const v of i % 2 === 0 ? variants : [...variants].reverse()) {
        if (before) execSync(before, { stdio: 'inherit' });
        const t0 = performance.now();
        const beside = v.atWake ? spawn('/bin/sh', ['-c', v.atWake], { stdio: 'ignore' }) : null;
        await sites.resume(v.site.siteId);
        const healthy = performance.now();
        const ok = (await firstOk(edge.port, v.site.hosts[0])).at;
        v.total.push(ok - t0);
        v.probe.push(healthy - t0);
        v.cpu.push(siteCpuSeconds(sup, v.site.siteId));
        if (beside && beside.exitCode === null) await new Promise((r) => beside.once('exit', r));
        await sites.stop(v.site.siteId);
        console.log(
          `${v.site.siteId} wake ${i + 1}: probe passed ${Math.round(healthy - t0)} ms, first 200 through the edge ${Math.round(ok - t0)} ms, site CPU ${v.cpu[i].toFixed(2)} s`,
        );
      }
    }
    const f = (n: number) => `${Math.round(n)} ms`;
    const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
    console.log(
      `\nwake to first 200 through the edge, ${wakes} wakes each (goal p95 ≤ 4000 ms); load average ${loadavg()[0].toFixed(1)}:`,
    );
    for (const v of variants) {
      const s = sorted(v.total);
      console.log(
        `  ${v.site.siteId} ${JSON.stringify(v.site.config)}${v.atWake ? ` beside: ${v.atWake}` : ''}: p50 ${f(pct(s, 50))}, p95 ${f(pct(s, 95))}, max ${f(s[s.length - 1])}; probe passed p50 ${f(pct(sorted(v.probe), 50))}; site CPU (boot and first page) mean ${(v.cpu.reduce((a, b) => a + b, 0) / wakes).toFixed(2)} s`,
      );
    }
    const first = variants[0].site;
    await breakdown(sites, sup, edge.port, { ...first, config: { ...first.config, DEBUG: 'ghost:boot' } });
  } finally {
    await sup.shutdown();
    await edge.close();
    rmSync(sitesRoot, { recursive: true, force: true });
  }
}

/**
 * One more start of the same site (same files, migrated database) with Ghost's boot debug on (each
 * line stamped by `debug` with its time) and its info log: each phase from the process's spawn.
 */
async function breakdown(sites: SiteHost, sup: Supervisor, edgePort: number, site: HostedSite): Promise<void> {
  const config = { ...site.config, logging__level: 'info' };
  const t0 = Date.now();
  const p0 = performance.now();
  const seen = new Map<string, number>();
  // Ghost's info lines carry its own clock only to the second: note when each line appears instead.
  let polling = true;
  const poll = (async () => {
    while (polling) {
      for (const line of sup.logs(site.siteId)) if (!seen.has(line)) seen.set(line, Date.now());
      await sleep(2);
    }
  })();
  await sites.start({ ...site, config });
  const healthy = Date.now();
  const { tries } = await firstOk(edgePort, site.hosts[0]);
  const ok = Date.now();
  polling = false;
  await poll;
  const spawnedAt = Date.parse(sup.status(site.siteId)?.startedAt ?? new Date(t0).toISOString());
  const at = (line: string) => {
    const stamp = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) /.exec(line);
    return stamp ? Date.parse(stamp[1]) : (seen.get(line) ?? NaN);
  };
  const lines = sup.logs(site.siteId);
  console.log(`\none boot, from the process's spawn (start() called ${spawnedAt - t0} ms before it):`);
  for (const [label, re] of PHASES) {
    const line = lines.find((l) => re.test(l));
    console.log(`  ${label.padEnd(40)} ${line ? `${at(line) - spawnedAt} ms` : 'not seen'}`);
  }
  console.log(`  ${'probe first passed'.padEnd(40)} ${healthy - spawnedAt} ms`);
  console.log(
    `  ${'first 200 through the edge'.padEnd(40)} ${ok - spawnedAt} ms (${Math.round(performance.now() - p0)} ms after start(); GET / answered ${tries.join(', ')})`,
  );
}

main().catch((e: Error) => {
  console.error(e);
  process.exit(1);
});
