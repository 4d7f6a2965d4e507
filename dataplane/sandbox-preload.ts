import type * as dnsTypes from 'node:dns';
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
 * - **requests under way:** that server's requests not yet answered are counted, and a second unix
 *   socket (`busy`) answers the count to whoever connects (the platform, before it puts an idle site
 *   to sleep: a long download or upload is not cut; docs/decisions/0420-requests-under-way.md);
 * - **lifetime:** the parent watch of every supervised child (decision 0245).
 *
 * The configuration is a JSON file named by `PLATFORM_SANDBOX_CONFIG` (the workload's own, in its run
 * directory; a launcher such as workerd's reads it too): `{ listen, busy?, egress: [{ host, port, path }] }`.
 */
export function sandboxRuntime(): void {
  const fs = require('node:fs') as typeof import('node:fs');
  const net = require('node:net') as typeof netTypes;
  const file = process.env.PLATFORM_SANDBOX_CONFIG;
  if (!file) return;
  const conf = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    listen: string;
    busy?: string;
    egress: { host: string; port: number; path: string }[];
  };
  const port = Number(process.env.PORT);
  const local = (h: unknown) => (h === undefined || h === null || h === 'localhost' || h === '::1' ? '127.0.0.1' : String(h));

  const listen = net.Server.prototype.listen as (...a: unknown[]) => netTypes.Server;
  let underWay = 0;
  let counting = false;
  /** Counts the ingress server's requests until each is answered (or its connection gone), and answers the count on `busy`. */
  const countRequests = (server: netTypes.Server) => {
    if (counting || !conf.busy) return;
    counting = true;
    server.on('request', (_req: unknown, res: NodeJS.EventEmitter) => {
      underWay++;
      res.once('close', () => underWay--);
    });
    try {
      fs.unlinkSync(conf.busy);
    } catch {
      // not there
    }
    const answer = net.createServer((c) => c.end(String(underWay)));
    answer.on('error', () => undefined);
    listen.call(answer, { path: conf.busy });
    answer.unref();
  };
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
      countRequests(this);
      const cb = args.find((x) => typeof x === 'function');
      return cb ? listen.call(this, { path: conf.listen }, cb) : listen.call(this, { path: conf.listen });
    }
    return listen.apply(this, args);
  } as typeof netTypes.Server.prototype.listen;

  if (conf.egress.length > 0) {
    // A declared host given by name (a real mail relay, a database server) has no DNS in here: its
    // name resolves to an address of its own in 127.255.0.0/16, which the connection below recognises.
    const alias = new Map<string, string>();
    conf.egress.forEach((e, i) => {
      if (net.isIP(e.host) === 0 && e.host !== 'localhost') alias.set(e.host.toLowerCase(), `127.255.${i >> 8}.${(i & 255) + 1}`);
    });
    if (alias.size > 0) {
      const dns = require('node:dns') as typeof dnsTypes;
      const named = (h: unknown) => (typeof h === 'string' ? alias.get(h.toLowerCase().replace(/\.$/, '')) : undefined);
      const lookup = dns.lookup as (...a: unknown[]) => void;
      dns.lookup = function (host: unknown, ...rest: unknown[]) {
        const a = named(host);
        if (!a) return lookup.call(dns, host, ...rest);
        const cb = rest.find((x) => typeof x === 'function') as (...r: unknown[]) => void;
        const o = rest.find((x) => typeof x === 'object' && x !== null) as { all?: boolean } | undefined;
        process.nextTick(() => (o?.all ? cb(null, [{ address: a, family: 4 }]) : cb(null, a, 4)));
      } as typeof dns.lookup;
      const resolve4 = dns.resolve4 as (...a: unknown[]) => void;
      dns.resolve4 = function (host: unknown, ...rest: unknown[]) {
        const a = named(host);
        if (!a) return resolve4.call(dns, host, ...rest);
        const cb = rest.find((x) => typeof x === 'function') as (...r: unknown[]) => void;
        process.nextTick(() => cb(null, [a]));
      } as typeof dns.resolve4;
      const plookup = dns.promises.lookup.bind(dns.promises);
      dns.promises.lookup = (async (host: string, o?: { all?: boolean }) => {
        const a = named(host);
        if (!a) return plookup(host, o as never);
        return o?.all ? [{ address: a, family: 4 }] : { address: a, family: 4 };
      }) as typeof dns.promises.lookup;
      const presolve4 = dns.promises.resolve4.bind(dns.promises);
      dns.promises.resolve4 = (async (host: string, o?: never) => {
        const a = named(host);
        return a ? [a] : presolve4(host, o as never);
      }) as typeof dns.promises.resolve4;
    }
    const connect = net.Socket.prototype.connect as (...a: unknown[]) => netTypes.Socket;
    const route = (o: { host?: unknown; port?: unknown; path?: unknown }): string | null => {
      if (o.path !== undefined || o.port === undefined) return null;
      const host = local(o.host).toLowerCase();
      const e = conf.egress.find(
        (x) => x.port === Number(o.port) && (local(x.host).toLowerCase() === host || alias.get(x.host.toLowerCase()) === host),
      );
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
