import http from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/** One HTTP request the load generator repeats (a fresh body is not needed: every request is the same). */
export interface LoadTarget {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** The status every answer must have (default 200). */
  status?: number;
  /** Connect to this unix socket instead of the URL's host and port (a sandboxed workload). */
  socketPath?: string;
}

export interface LoadFigures {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/**
 * Keep-alive load on one target: `warmup` requests one at a time, then `concurrency` clients for
 * `seconds`; answers requests per second and latency percentiles in ms. Like `hammer`
 * (keep-alive-load.ts) but with latencies, methods and headers.
 */
export async function load(t: LoadTarget, concurrency: number, seconds: number, warmup = 100): Promise<LoadFigures> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const expected = t.status ?? 200;
  const send = () =>
    new Promise<void>((resolve, reject) => {
      const opts = {
        method: t.method ?? 'GET',
        headers: t.headers,
        agent,
        ...(t.socketPath ? { socketPath: t.socketPath } : {}),
      };
      const req = http.request(t.url, opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode !== expected) {
            reject(
              new Error(
                `HTTP ${res.statusCode} from ${t.method ?? 'GET'} ${t.url}: ${Buffer.concat(chunks).toString().slice(0, 300)}`,
              ),
            );
          } else resolve();
        });
      });
      req.on('error', reject);
      req.end(t.body);
    });
  for (let i = 0; i < warmup; i++) await send();
  const times: number[] = [];
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        await send();
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  times.sort((a, b) => a - b);
  return { rps: times.length / elapsed, p50: pct(times, 50), p99: pct(times, 99), requests: times.length };
}

interface LoadJob {
  loadStats: true;
  target: LoadTarget;
  concurrency: number;
  seconds: number;
  warmup: number;
}

/** `load` in a worker thread of its own: the server under test keeps this event loop to itself. */
export function loadInWorker(target: LoadTarget, concurrency: number, seconds: number, warmup = 100): Promise<LoadFigures> {
  const job: LoadJob = { loadStats: true, target, concurrency, seconds, warmup };
  return new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: job });
    w.once('message', (m: { ok: LoadFigures } | { error: string }) => ('ok' in m ? resolve(m.ok) : reject(new Error(m.error))));
    w.once('error', reject);
  });
}

if (!isMainThread && (workerData as Partial<LoadJob> | null)?.loadStats) {
  const job = workerData as LoadJob;
  load(job.target, job.concurrency, job.seconds, job.warmup).then(
    (ok) => parentPort!.postMessage({ ok }),
    (e: Error) => parentPort!.postMessage({ error: e.message }),
  );
}
