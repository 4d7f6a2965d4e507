import net from 'node:net';
import { connectMongo, MONGO_SERVER_SELECTION_MS } from '../../core/mongo';
import { freePort } from '../support/edge';

/**
 * Opening a connection waits for a server that is not answering yet (a busy or still-starting
 * MongoDB-wire server) instead of failing after one server selection. Real server behind a TCP
 * forwarder that starts listening only after several selection timeouts.
 */
describe('connectMongo at start', () => {
  it('keeps trying until the server answers', async () => {
    const port = await freePort();
    const forwarder = net.createServer((client) => {
      const upstream = net.connect(27017, '127.0.0.1');
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close);
      upstream.on('error', close);
    });
    const late = setTimeout(() => forwarder.listen(port, '127.0.0.1'), MONGO_SERVER_SELECTION_MS * 2);
    try {
      const conn = await connectMongo(`mongodb://127.0.0.1:${port}/t_startup`);
      expect(await conn.db!.admin().command({ ping: 1 })).toMatchObject({ ok: 1 });
      await conn.close();
    } finally {
      clearTimeout(late);
      forwarder.close();
    }
  }, 30_000);

  it('gives up after its startup wait with the selection error', async () => {
    const port = await freePort();
    await expect(connectMongo(`mongodb://127.0.0.1:${port}/t_startup`, { startupWaitMs: 0 })).rejects.toMatchObject({
      name: 'MongooseServerSelectionError',
    });
  });
});
