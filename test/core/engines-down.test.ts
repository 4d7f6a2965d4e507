import net from 'node:net';
import { loadConfig } from '../../core/config';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** A TCP proxy in front of the MongoDB-wire server that the test can take down. */
async function mongoProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    down: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

let t: TestPlatform;
let proxy: Awaited<ReturnType<typeof mongoProxy>>;
const savedUri = process.env.MONGODB_URI;
beforeAll(async () => {
  const real = new URL(loadConfig(process.env).mongodbUri);
  proxy = await mongoProxy({ host: real.hostname, port: Number(real.port || 27017) });
  process.env.MONGODB_URI = `mongodb://127.0.0.1:${proxy.port}/platform`;
  // No background workers: the mail area's scan loops do not survive a database outage yet
  // (unhandled rejections, reported to the lead); this test is about request answers.
  t = await startTestPlatform({}, { workers: false });
}, 60_000);
afterAll(async () => {
  process.env.MONGODB_URI = savedUri;
  await t?.platform.stop().catch(() => undefined);
});

describe('MongoDB unreachable', () => {
  it('answers 503 service_unavailable with Retry-After and the envelope within 2 s, for a known and an unknown key', async () => {
    const { key } = await t.createKey();
    expect((await t.rest('GET', '/api/v1/publisher/runtime-options', { key })).status).toBe(200);
    proxy.down();

    for (const bearer of [key, 'pk_0123456789ab_abcdefghijklmnopqrstuvwxyzABCDEF']) {
      const started = Date.now();
      const res = await t.rest('POST', '/api/v1/publisher/sites', { key: bearer, body: { name: 'Down' } });
      const elapsed = Date.now() - started;
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
      expect(elapsed).toBeLessThan(2_000);
    }
  }, 30_000);
});
