import type { FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { STATUS_CODES } from 'node:http';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { sessionIdOf } from '../core/console-sessions';
import type { ConsoleOptions } from './console-options';
import { requestSite } from './same-origin';

/** The console's open sockets, by session: signing out closes them. */
export interface ConsoleSockets {
  closeSession(hash: string): void;
}

/** graphql-ws close code for a socket whose session ended (its key signed out or expired). */
const SESSION_ENDED = 4403;

/** Close codes a peer may send (RFC 6455 7.4): others (1005, 1006, 1015 …) become 1011 or 1000. */
function sendableCode(code: number): number {
  if (code >= 3000 && code <= 4999) return code;
  if ([1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014].includes(code)) return code;
  return code === 1005 ? 1000 : 1011;
}

function refuseUpgrade(socket: Duplex, status: number, body = ''): void {
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * `GET /console/api/graphql` upgraded to a websocket: the browser's graphql-ws socket, proxied to
 * the router's graphql-ws endpoint with the session's key in the upgrade's Authorization header
 * (the router reads it when `connection_init` carries none). Same origin only; the router checks
 * the key, limits and re-checks it as for any client, and its close codes reach the browser.
 */
export function attachConsoleSocket(app: FastifyInstance, path: string, opts: ConsoleOptions): ConsoleSockets {
  // The browser is answered with the subprotocol the router chose (graphql-transport-ws).
  const chosen = new WeakMap<IncomingMessage, string>();
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (_offered, req) => chosen.get(req) || false });
  const bySession = new Map<string, Set<WebSocket>>();
  const pairs = new Set<{ client?: WebSocket; upstream: WebSocket }>();

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if ((req.url ?? '').split('?')[0] !== path) return refuseUpgrade(socket, 404);
    void (async () => {
      if (requestSite(req.headers, opts.baseUrl()) !== 'same') return refuseUpgrade(socket, 403, 'cross_site_request');
      const target = opts.routerWsUrl();
      const session = req.headers.authorization ? null : await opts.sessions.open(sessionIdOf(req.headers.cookie));
      const authorization = req.headers.authorization ?? (session ? `Bearer ${session.key}` : undefined);
      if (!authorization) return refuseUpgrade(socket, 401, 'no console session; sign in');
      if (!target) return refuseUpgrade(socket, 503);
      const protocols = (req.headers['sec-websocket-protocol'] ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const headers: Record<string, string> = { authorization };
      if (req.socket.remoteAddress) headers['x-forwarded-for'] = req.socket.remoteAddress;
      const upstream = new WebSocket(target, protocols, { headers });
      const pair: { client?: WebSocket; upstream: WebSocket } = { upstream };
      pairs.add(pair);
      upstream.once('unexpected-response', (_r, res) => {
        pairs.delete(pair);
        refuseUpgrade(socket, res.statusCode === 401 || res.statusCode === 403 ? res.statusCode : 502);
        upstream.terminate();
      });
      upstream.on('error', () => {
        pairs.delete(pair);
        if (!pair.client) refuseUpgrade(socket, 502);
        else pair.client.close(1011, 'router unreachable');
      });
      upstream.once('open', () => {
        chosen.set(req, upstream.protocol);
        wss.handleUpgrade(req, socket, head, (client) => {
          pair.client = client;
          if (session) {
            const set = bySession.get(session.hash) ?? new Set<WebSocket>();
            bySession.set(session.hash, set.add(client));
            const ends = setTimeout(
              () => client.close(SESSION_ENDED, 'Forbidden: session expired'),
              session.expiresAt.getTime() - Date.now(),
            );
            ends.unref();
            client.once('close', () => {
              clearTimeout(ends);
              set.delete(client);
              if (set.size === 0) bySession.delete(session.hash);
            });
          }
          const relay = (to: WebSocket) => (data: RawData, isBinary: boolean) => {
            if (to.readyState === WebSocket.OPEN) to.send(data, { binary: isBinary });
          };
          client.on('message', relay(upstream));
          upstream.on('message', relay(client));
          client.on('close', (code, reason) => {
            pairs.delete(pair);
            if (upstream.readyState === WebSocket.OPEN) upstream.close(sendableCode(code), reason);
            else upstream.terminate();
          });
          upstream.on('close', (code, reason) => {
            pairs.delete(pair);
            if (client.readyState === WebSocket.OPEN) client.close(sendableCode(code), reason);
          });
          client.on('error', () => upstream.terminate());
        });
      });
    })().catch(() => refuseUpgrade(socket, 503));
  };

  app.server.on('upgrade', onUpgrade);
  app.addHook('onClose', async () => {
    app.server.off('upgrade', onUpgrade);
    for (const pair of pairs) {
      pair.client?.terminate();
      pair.upstream.terminate();
    }
    pairs.clear();
    wss.close();
  });

  return {
    closeSession(hash) {
      for (const client of bySession.get(hash) ?? []) client.close(SESSION_ENDED, 'Forbidden: signed out');
      bySession.delete(hash);
    },
  };
}
