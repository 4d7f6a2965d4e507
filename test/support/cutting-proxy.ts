import net from 'node:net';

/** Which way bytes go through the proxy: to the server (`up`) or back to the client (`down`). */
export type ProxyDirection = 'up' | 'down';

/**
 * A TCP proxy in front of a test's server that counts the bytes it relays each way and, once armed,
 * cuts the connection that carries the `after`-th byte in one direction (both sockets destroyed):
 * a transfer broken mid-way, as a network does.
 */
export interface CuttingProxy {
  url: string;
  /** Bytes relayed each way since the last `reset`. */
  sent: Record<ProxyDirection, number>;
  /** Bytes relayed in the cut's direction, counted from its arming, when the cut happened (null: not yet). */
  cutAt: number | null;
  /** Cuts once, after `after` more bytes go `direction`. */
  cutOnce(direction: ProxyDirection, after: number): void;
  reset(): void;
  close(): Promise<void>;
}

export async function cuttingProxy(target: string): Promise<CuttingProxy> {
  const { hostname, port } = new URL(target);
  let plan: { direction: ProxyDirection; after: number; seen: number } | null = null;
  const sockets = new Set<net.Socket>();
  const proxy: Omit<CuttingProxy, 'url' | 'close'> = {
    sent: { up: 0, down: 0 },
    cutAt: null,
    cutOnce(direction, after) {
      plan = { direction, after, seen: 0 };
      proxy.cutAt = null;
    },
    reset() {
      proxy.sent = { up: 0, down: 0 };
    },
  };
  const relay = (from: net.Socket, to: net.Socket, direction: ProxyDirection) => {
    from.on('data', (c: Buffer) => {
      let chunk = c;
      let cut = false;
      if (plan?.direction === direction) {
        chunk = c.subarray(0, plan.after - plan.seen);
        plan.seen += chunk.length;
        cut = plan.seen >= plan.after;
      }
      proxy.sent[direction] += chunk.length;
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => from.resume());
      }
      if (cut) {
        proxy.cutAt = plan!.seen;
        plan = null;
        from.destroy();
        to.destroy();
      }
    });
    from.on('end', () => to.end());
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    relay(client, upstream, 'up');
    relay(upstream, client, 'down');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return Object.assign(proxy, {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  }) as CuttingProxy;
}
