/**
 * The baseline of uploads: the same bytes over loopback HTTP into a file on the same disk, nothing
 * else (a plain node server piping the request body to a file). The client is curl, another process.
 */
import { execFile } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Seconds to send `file` to a plain server that writes it to `dir`. */
export async function rawLoopbackWrite(file: string, dir: string): Promise<number> {
  const out = path.join(dir, 'raw.out');
  const server = http.createServer((req, res) => {
    void pipeline(req, createWriteStream(out)).then(() => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const t0 = performance.now();
  await run('curl', ['-sS', '-o', '/dev/null', '-T', file, `http://127.0.0.1:${port}/`], { maxBuffer: 1 << 20 });
  const seconds = (performance.now() - t0) / 1000;
  server.close();
  await rm(out, { force: true });
  return seconds;
}
