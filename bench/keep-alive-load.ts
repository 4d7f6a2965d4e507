import http from 'node:http';

/**
 * A keep-alive GET load generator: `warmup` requests one at a time, then `concurrency` clients for
 * `seconds`; answers requests per second. Benchmarks run it in a worker thread, so the client does
 * not share an event loop with the server it measures.
 */
export async function hammer(url: string, concurrency: number, seconds: number, warmup = 100): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      http
        .get(url, { agent }, (res) => {
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
