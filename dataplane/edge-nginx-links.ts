import fs from 'node:fs';
import path from 'node:path';
import type { EdgeRoute } from './edge-common';

/**
 * The nginx engine's route links (docs/decisions/0320-edge-route-links.md), in nginx's folder:
 * - `slots/<n>/sock`: a symlink to one workload's unix socket. A slot keeps its socket while any
 *   host uses it; nginx has an `upstream edge_slot_<n>` on it, with kept-alive connections. A slot
 *   no host uses is removed, and given to another socket only after nginx's idle upstream
 *   connections to the old one have timed out (`SLOT_QUARANTINE_MS`);
 * - `links/<host>`: a symlink to `../slots/<n>` while the route runs on a unix socket, else to
 *   `../control` (stopped, restoring, sleeping: the Node side's control listener answers or holds);
 * - `links/.none` → `../control`: what nginx takes for a host without a link.
 * nginx resolves `links/<host>` per request (`$realpath_root`) and forwards to the slot's upstream.
 * So adding, switching, stopping or removing such a host changes files, not the configuration: no
 * reload. A switch replaces the link atomically (a new symlink, then `rename` over the old one): a
 * request takes the old slot or the new one, never none, and a kept connection of the old slot
 * only ever reaches the old socket.
 */

/**
 * Hosts nginx finds by link: plain names (nginx lower-cases `$host` and refuses `/` and `..` in it).
 * The rest (and workloads on a TCP port) go through nginx's `map`, which a reload changes.
 */
export const LINK_HOST = /^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$/;
/** The same pattern in nginx's regex syntax (the map captures the host as `$edge_k`). */
export const LINK_HOST_NGINX = '^(?<edge_k>[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?)$';
/** Longer than nginx's `keepalive_timeout` for slot upstreams (10 s). */
export const SLOT_QUARANTINE_MS = 15_000;
/** Slots the configuration declares at least (more, in powers of two, cost a reload when needed). */
const MIN_SLOTS = 64;

/** The socket each host served by link should reach (null: the control listener). */
export function linkTargets(routes: ReadonlyMap<string, EdgeRoute>): Map<string, string | null> {
  const out = new Map<string, string | null>();
  for (const [host, route] of routes) {
    if (!servedByLink(host, route)) continue;
    out.set(host, route.state === 'running' ? route.target.socketPath! : null);
  }
  return out;
}

/** True when nginx reaches this route by its link (else through the map). */
export function servedByLink(host: string, route: EdgeRoute): boolean {
  return LINK_HOST.test(host) && (route.state !== 'running' || Boolean(route.target.socketPath));
}

let seq = 0;

export class EdgeLinks {
  /** Each host's link, as written (`../slots/<n>` or `../control`). */
  private readonly links = new Map<string, string>();
  private readonly slotOf = new Map<string, number>();
  /** Slots no host uses any more, and since when. */
  private readonly freed = new Map<number, number>();
  private next = 0;

  /** `prefix` is nginx's folder; links and slots of an earlier run are removed. */
  constructor(
    readonly prefix: string,
    private readonly quarantineMs = SLOT_QUARANTINE_MS,
  ) {
    for (const d of ['links', 'slots', 'control']) {
      fs.rmSync(path.join(prefix, d), { recursive: true, force: true });
      fs.mkdirSync(path.join(prefix, d), { recursive: true });
    }
    this.point('.none', '../control');
  }

  /** How many slot upstreams the configuration must declare. */
  get slots(): number {
    let n = MIN_SLOTS;
    while (n < this.next) n *= 2;
    return n;
  }

  /** Makes the links what `want` says (host → socket, null for the control listener), touching only what changes. */
  sync(want: ReadonlyMap<string, string | null>): void {
    const used = new Set<string>();
    for (const [host, socket] of want) {
      let target = '../control';
      if (socket !== null) {
        used.add(socket);
        target = `../slots/${this.slot(socket)}`;
      }
      if (this.links.get(host) === target) continue;
      this.point(host, target);
      this.links.set(host, target);
    }
    for (const host of [...this.links.keys()]) {
      if (want.has(host)) continue;
      fs.rmSync(path.join(this.prefix, 'links', host), { force: true });
      this.links.delete(host);
    }
    for (const [socket, n] of [...this.slotOf]) {
      if (used.has(socket)) continue;
      fs.rmSync(path.join(this.prefix, 'slots', String(n)), { recursive: true, force: true });
      this.slotOf.delete(socket);
      this.freed.set(n, Date.now());
    }
  }

  /** The slot of `socket`: its own, else a freed one past its quarantine, else a new one. */
  private slot(socket: string): number {
    let n = this.slotOf.get(socket);
    if (n !== undefined) return n;
    const now = Date.now();
    n = [...this.freed].find(([, at]) => now - at >= this.quarantineMs)?.[0];
    if (n === undefined) n = this.next++;
    else this.freed.delete(n);
    const fresh = path.join(this.prefix, 'slots', `.new-${process.pid}-${++seq}`);
    fs.mkdirSync(fresh);
    fs.symlinkSync(socket, path.join(fresh, 'sock'));
    fs.renameSync(fresh, path.join(this.prefix, 'slots', String(n)));
    this.slotOf.set(socket, n);
    return n;
  }

  /** `links/<host>` → `target`, replaced atomically. */
  private point(host: string, target: string): void {
    const tmp = path.join(this.prefix, 'links', `.tmp-${process.pid}-${++seq}`);
    fs.symlinkSync(target, tmp);
    fs.renameSync(tmp, path.join(this.prefix, 'links', host));
  }
}
