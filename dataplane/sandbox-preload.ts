import type * as netTypes from 'node:net';
import { PARENT_GONE_GRACE_MS, parentWatch, preloadFile } from './supervisor-preload';

/**
 * The preload of a sandboxed Node workload (`node --require <file>`; docs/decisions/0273-tenant-sandbox.md).
 * It is plumbing, not the boundary (the namespaces are): inside its own network namespace the
 * workload has only its own loopback, so
 *
 * - **ingress:** the server the workload starts on `PORT` (Ghost's, an app's) listens on the unix
 *   socket of its run directory instead, where the edge and the platform connect;
 * - **egress:** a connection to a declared host:port (its SMTP relay, its database server) goes to
 *   that egress's unix socket, which the platform pipes to the real address. Anything else finds no
 *   route, as the namespace has none;
 * - **lifetime:** the parent watch of every supervised child (decision 0245).
 *
 * The configuration is a JSON file named by `PLATFORM_SANDBOX_CONFIG` (the workload's own, in its run
 * directory; a launcher such as workerd's reads it too): `{ listen, egress: [{ host, port, path }] }`.
 */
export function sandboxRuntime(): void {
  const fs = require('node:fs') as typeof import('node:fs');
  const net = require('node:net') as typeof netTypes;
  const file = process.env.PLATFORM_SANDBOX_CONFIG;
  if (!file) return;
  const conf = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    listen: string;
    egress: { host: string; port: number; path: string }[];
  };
  const port = Number(process.env.PORT);
  const local = (h: unknown) => (h === undefined || h === null || h === 'localhost' || h === '::1' ? '127.0.0.1' : String(h));

  const listen = net.Server.prototype.listen as (...a: unknown[]) => netTypes.Server;
  net.Server.prototype.listen = function (this: netTypes.Server, ...args: unknown[]): netTypes.Server {
    const a0 = args[0] as { port?: unknown; path?: unknown } | number | string | undefined;
    let asked: number | null = null;
    if (typeof a0 === 'number' || (typeof a0 === 'string' && /^\d+$/.test(a0))) asked = Number(a0);
    else if (a0 && typeof a0 === 'object' && a0.path === undefined && a0.port !== undefined) asked = Number(a0.port);
    if (port > 0 && asked === port) {
      try {
        fs.unlinkSync(conf.listen);
      } catch {
        // not there
      }
      const cb = args.find((x) => typeof x === 'function');
      return cb ? listen.call(this, { path: conf.listen }, cb) : listen.call(this, { path: conf.listen });
    }
    return listen.apply(this, args);
  } as typeof netTypes.Server.prototype.listen;

  if (conf.egress.length > 0) {
    const connect = net.Socket.prototype.connect as (...a: unknown[]) => netTypes.Socket;
    const route = (o: { host?: unknown; port?: unknown; path?: unknown }): string | null => {
      if (o.path !== undefined || o.port === undefined) return null;
      const e = conf.egress.find((x) => x.port === Number(o.port) && local(x.host) === local(o.host));
      return e ? e.path : null;
    };
    net.Socket.prototype.connect = function (this: netTypes.Socket, ...args: unknown[]): netTypes.Socket {
      const a0 = args[0];
      // net.connect() hands over its normalised [options, cb] array; a direct call passes options or (port, host).
      const opts = (
        Array.isArray(a0) ? a0[0] : typeof a0 === 'object' && a0 !== null ? a0 : { port: a0, host: args[1] }
      ) as Record<string, unknown>;
      const to = route(opts);
      if (to) {
        const cb = Array.isArray(a0) ? a0[1] : args.find((x) => typeof x === 'function');
        const next: Record<string, unknown> = { ...opts, path: to };
        delete next.host;
        delete next.port;
        delete next.lookup;
        return cb ? connect.call(this, next, cb) : connect.call(this, next);
      }
      return connect.apply(this, args);
    } as typeof netTypes.Socket.prototype.connect;
  }
}

/** The preload as a file in the platform's private directory: the runtime above, then the parent watch. */
export function sandboxPreloadFile(dir?: string): string {
  const source = `'use strict';\n(${sandboxRuntime.toString()})();\n(${parentWatch.toString()})(${PARENT_GONE_GRACE_MS});\n`;
  return preloadFile('platform-sandbox', source, dir);
}
