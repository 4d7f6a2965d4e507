import http from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

/**
 * A keep-alive GET load generator: `warmup` requests one at a time, then `concurrency` clients for
 * `seconds`; answers requests per second. Benchmarks run it in a worker thread, so the client does
 * not share an event loop with the server it measures. `headers` go on every request (e.g. a bearer key).
 */
export async function hammer(
  url: string,
  concurrency: number,
  seconds: number,
  warmup = 100,
  headers: Record<string, string> = {},
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent, headers }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode} from ${url}`));
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
  for (let i = 0; i < warmup; i++) await get();
  let done = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await get();
        done++;
      }
    }),
  );
  agent.destroy();
  return done / seconds;
}

interface LoadJob {
  keepAliveLoad: true;
  url: string;
  concurrency: number;
  seconds: number;
  warmup: number;
  headers?: Record<string, string>;
}

/** `hammer` in a worker thread of its own: the server under test keeps this event loop to itself. */
export function hammerInWorker(
  url: string,
  concurrency: number,
  seconds: number,
  warmup = 100,
  headers: Record<string, string> = {},
): Promise<number> {
  const job: LoadJob = { keepAliveLoad: true, url, concurrency, seconds, warmup, headers };
  return new Promise((resolve, reject) => {
    const w = new Worker(__filename, { workerData: job });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

if (!isMainThread && (workerData as Partial<LoadJob> | null)?.keepAliveLoad) {
  const job = workerData as LoadJob;
  void hammer(job.url, job.concurrency, job.seconds, job.warmup, job.headers).then((rps) => parentPort!.postMessage(rps));
}
