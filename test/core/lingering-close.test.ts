import Fastify from 'fastify';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { installLingeringClose } from '../../rest-bridge/lingering-close';

/**
 * docs/decisions/0306-lingering-close.md: a kept-alive connection whose requests are refused while
 * their bodies arrive lingers after each answer; each lingering removes what it added, so the socket
 * does not collect a listener per refused request (Node warned of a leak after ten).
 */
describe('lingering close on a kept-alive connection', () => {
  it.each([
    ['with a pause between requests', 120],
    ['with each request sent as soon as the last answer came', 0],
  ])('answers every refused body and leaves no listener behind on the socket, %s', async (_case, pauseMs) => {
    const app = Fastify({ bodyLimit: 16 });
    installLingeringClose(app);
    app.post('/', async () => ({ ok: true }));
    let socketListeners = 0;
    app.addHook('onResponse', async (req) => {
      socketListeners = Math.max(socketListeners, req.raw.socket.listenerCount('close'));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        statuses.push(
          await new Promise<number>((resolve, reject) => {
            const req = http.request(
              { port, method: 'POST', path: '/', agent, headers: { 'content-type': 'application/json' } },
              (res) => {
                res.resume().on('end', () => resolve(res.statusCode ?? 0));
              },
            );
            req.on('error', reject);
            req.end(JSON.stringify({ padding: 'x'.repeat(200) }));
          }),
        );
        // The lingering timer looks every 100 ms; the body's end stops it before that.
        if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
      }
      expect(statuses).toEqual(Array(15).fill(413));
      expect(socketListeners).toBeLessThan(5);
      expect(warnings.filter((w) => /close listeners/.test(w))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      agent.destroy();
      await app.close();
    }
  });
});
