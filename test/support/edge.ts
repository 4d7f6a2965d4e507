import http from 'node:http';
import net from 'node:net';

/** A TCP port free on 127.0.0.1 right now (for an edge or agent the test starts). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** A request to an edge as a site's host (`*.sites.localhost` does not resolve in Node). */
export function viaEdge(
  edgeUrl: string,
  host: string,
  method: string,
  p: string,
  opts: { body?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: new URL(edgeUrl).port, method, path: p, headers: { host, ...opts.headers }, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    if (opts.body) req.write(opts.body);
    req.end();
  });
}

/** `GET /` on an edge as a site's host. */
export function siteViaEdge(port: number, siteUrl: string): Promise<{ status: number; body: string }> {
  return viaEdge(`http://127.0.0.1:${port}`, new URL(siteUrl).host, 'GET', '/');
}
