import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { HttpSource } from './sources';

/** The HTTP migration source: its token goes only to its own origin; its timeout is total. */
describe('HttpSource', () => {
  const servers: http.Server[] = [];
  const listen = async (handler: http.RequestListener) => {
    const s = http.createServer(handler);
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };
  afterAll(async () => {
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });
  const opts = (timeoutMs = 2000) => ({ allowHosts: new Set(['127.0.0.1']), timeoutMs });

  it('sends the bearer token to the source origin only, never to a host the manifest names', async () => {
    const seen: { where: string; auth: string | undefined }[] = [];
    const elsewhere = await listen((req, res) => {
      seen.push({ where: 'elsewhere', auth: req.headers.authorization });
      res.end('stolen?');
    });
    const origin = await listen((req, res) => {
      seen.push({ where: `origin${req.url}`, auth: req.headers.authorization });
      if (req.url === '/manifest.json') {
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ objects: [{ key: 'a.txt' }, { key: 'b.txt', url: `${elsewhere}/b.txt` }] }));
      }
      res.end('mine');
    });
    const src = new HttpSource({ base_url: origin, manifest_path: 'manifest.json' } as never, 'tok-123', opts());
    const { objects } = await src.list();
    for (const o of objects) (await src.open(o)).resume();
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).toEqual([
      { where: 'origin/manifest.json', auth: 'Bearer tok-123' },
      { where: 'origin/a.txt', auth: 'Bearer tok-123' },
      { where: 'elsewhere', auth: undefined },
    ]);
  });

  it('gives up on a manifest that drips bytes forever once the total timeout passes', async () => {
    const origin = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"objects": [');
      const t = setInterval(() => res.write(' '), 50);
      res.on('close', () => clearInterval(t));
    });
    const src = new HttpSource({ base_url: origin, manifest_path: 'm.json' } as never, null, opts(600));
    const started = Date.now();
    await expect(src.list()).rejects.toMatchObject({ code: 'assets.connection_unreachable' });
    expect(Date.now() - started).toBeLessThan(3000);
  }, 10_000);

  it('gives up on headers that never finish arriving once the total timeout passes', async () => {
    const srv = net.createServer((sock) => {
      sock.write('HTTP/1.1 200 OK\r\n');
      const t = setInterval(() => sock.write('X-Slow: 1\r\n'), 50);
      sock.on('close', () => clearInterval(t));
      sock.on('error', () => clearInterval(t));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const origin = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const src = new HttpSource({ base_url: origin, manifest_path: 'm.json' } as never, null, opts(600));
    const started = Date.now();
    await expect(src.list()).rejects.toMatchObject({ code: 'assets.connection_unreachable' });
    expect(Date.now() - started).toBeLessThan(3000);
    await new Promise((r) => srv.close(r));
  }, 10_000);
});
