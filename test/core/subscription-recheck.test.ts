import { createClient, type Client } from 'graphql-ws';
import http from 'node:http';
import WebSocket from 'ws';
import { childLogger } from '../../core/logger';
import { Ports } from '../../core/ports';
import type { Principal } from '../../core/principal';
import type { FeedHub } from '../../router/feed-hub';
import { attachSubscriptions, SUBSCRIPTION_RECHECK_MS } from '../../router/subscriptions';

/**
 * Open subscription sockets have their key checked again every round; sockets that share a key
 * share the check (a thousand subscribers of one key cost one lookup a round, not a thousand, in
 * the middle of the fan-outs they wait for), and a revoked key still closes every one of them.
 */
describe('subscription key re-check', () => {
  it('checks each key once a round and closes all of its sockets when it is revoked', async () => {
    const principal = { accountId: 'acct', keyId: 'k1' } as Principal;
    let revoked = false;
    const calls: (string | undefined)[] = [];
    const server = http.createServer();
    const subs = attachSubscriptions(server, '/graphql', {
      hub: {} as FeedHub,
      feeds: [],
      ports: new Ports(),
      authenticate: async (header) => {
        calls.push(header);
        return revoked && header === 'Bearer one' ? null : principal;
      },
      log: childLogger('test'),
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `ws://127.0.0.1:${(server.address() as { port: number }).port}/graphql`;
    const closed: number[] = [];
    const clients: Client[] = [];
    let connected = 0;
    for (const key of ['one', 'one', 'one', 'one', 'two']) {
      const c = createClient({
        url,
        webSocketImpl: WebSocket,
        connectionParams: { authorization: `Bearer ${key}` },
        retryAttempts: 0,
        lazy: false,
        onNonLazyError: () => undefined,
        on: { connected: () => connected++, closed: (e) => closed.push((e as { code: number }).code) },
      });
      clients.push(c);
    }
    try {
      const end = Date.now() + 10_000;
      while (connected < 5 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(connected).toBe(5);

      calls.length = 0;
      await new Promise((r) => setTimeout(r, SUBSCRIPTION_RECHECK_MS * 2 + 200));
      // Per round one lookup per key, whatever the number of sockets: four sockets of `one` cost
      // as much as the single socket of `two`.
      const one = calls.filter((c) => c === 'Bearer one').length;
      expect(one).toBeGreaterThanOrEqual(2);
      expect(calls.filter((c) => c === 'Bearer two').length).toBe(one);
      expect(calls).toHaveLength(2 * one);

      revoked = true;
      await new Promise((r) => setTimeout(r, SUBSCRIPTION_RECHECK_MS + 500));
      expect(closed).toEqual([4403, 4403, 4403, 4403]);
    } finally {
      await Promise.all(clients.map((c) => c.dispose()));
      await subs.close();
      server.close();
    }
  });
});
