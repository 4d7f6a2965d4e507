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

/** `GET /` on an edge as a site's host (`*.sites.localhost` does not resolve in Node). */
export function siteViaEdge(port: number, siteUrl: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/', headers: { host: new URL(siteUrl).host }, agent: false },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
