/**
 * The baseline of the CDN: a plain node HTTP server sending one file from disk (fs stream), no
 * lookup, no headers beyond the length — what any static file server does at the least.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';

export async function startStaticFileServer(file: string): Promise<{ url: string; close(): Promise<void> }> {
  const size = (await stat(file)).size;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
    createReadStream(file).pipe(res);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/file`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
