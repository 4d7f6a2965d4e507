import Fastify from 'fastify';
import net from 'node:net';
import { closeListener } from './http-close';

describe('closeListener', () => {
  it('does not wait out the keep-alive timeout for a connection Fastify still counts as busy', async () => {
    const app = Fastify();
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as net.AddressInfo;
    // A request whose headers never end: the parser is mid-message, so the connection is not idle
    // and a plain `app.close()` would wait for it.
    const sock = net.connect(port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    sock.write('GET / HTTP/1.1\r\nHost: x\r\n');
    const closed = new Promise((r) => sock.once('close', r));
    await new Promise((r) => setTimeout(r, 50));

    const started = Date.now();
    await closeListener(app, 200);
    await closed;
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
