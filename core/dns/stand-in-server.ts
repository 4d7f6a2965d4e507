import dgram from 'node:dgram';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import * as packet from 'dns-packet';

/**
 * The DNS stand-in: a real DNS server on loopback (UDP, and TCP on the same port) answering from
 * zones held in memory, loaded from a JSON file or given by test fixtures. It speaks the wire
 * protocol through `dns-packet`, so the resolver under test is the real one (c-ares). An answer that
 * does not fit a UDP datagram is sent truncated (TC), and the client retries over TCP, as on the
 * Internet. Names can be made to fail: `servfail` answers SERVFAIL, `timeout` never answers.
 */
export interface ZoneEntry {
  TXT?: string[];
  MX?: { priority: number; exchange: string }[];
  A?: string[];
  AAAA?: string[];
  /** Make every query for this name fail this way. */
  behavior?: 'servfail' | 'timeout';
}

/** Lower-case name without the trailing dot → its records. Unlisted names are NXDOMAIN. */
export type Zones = Record<string, ZoneEntry>;

export interface DnsStandIn {
  host: string;
  port: number;
  /** `host:port`, the form `MAIL_DNS_SERVERS` takes. */
  address: string;
  /** Questions answered so far (`TYPE name`), oldest first; tests read it to prove caching. */
  readonly queries: string[];
  setZones(zones: Zones): void;
  stop(): Promise<void>;
}

/** Largest answer sent over UDP before truncation (the EDNS-less classic limit). */
const UDP_MAX_BYTES = 512;
const TTL_SECONDS = 60;

/** TXT character-strings are at most 255 bytes each (RFC 1035 §3.3); a longer record is split. */
function txtChunks(value: string): string[] {
  const chunks: string[] = [];
  for (let i = 0; i < value.length; i += 255) chunks.push(value.slice(i, i + 255));
  return chunks.length ? chunks : [''];
}

function answersFor(name: string, type: string, entry: ZoneEntry): packet.Answer[] {
  const base = { name, ttl: TTL_SECONDS, class: 'IN' as const };
  switch (type) {
    case 'TXT':
      return (entry.TXT ?? []).map((t) => ({ ...base, type: 'TXT' as const, data: txtChunks(t) }));
    case 'MX':
      return (entry.MX ?? []).map((m) => ({
        ...base,
        type: 'MX' as const,
        data: { preference: m.priority, exchange: m.exchange },
      }));
    case 'A':
      return (entry.A ?? []).map((a) => ({ ...base, type: 'A' as const, data: a }));
    case 'AAAA':
      return (entry.AAAA ?? []).map((a) => ({ ...base, type: 'AAAA' as const, data: a }));
    default:
      return [];
  }
}

/** The response to one query, or null when the name is set to time out. */
export function respond(query: packet.Packet, zones: Zones): packet.Packet | null {
  const q = query.questions?.[0];
  const reply: packet.Packet = {
    id: query.id,
    type: 'response',
    flags: packet.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & packet.RECURSION_DESIRED) | packet.RECURSION_AVAILABLE,
    questions: query.questions,
    answers: [],
  };
  if (!q) return { ...reply, flags: (reply.flags ?? 0) | 1 /* FORMERR */ };
  const name = q.name.toLowerCase().replace(/\.$/, '');
  const entry = zones[name];
  if (entry?.behavior === 'timeout') return null;
  if (entry?.behavior === 'servfail') return { ...reply, flags: (reply.flags ?? 0) | 2 };
  if (!entry) return { ...reply, flags: (reply.flags ?? 0) | 3 /* NXDOMAIN */ };
  return { ...reply, answers: answersFor(q.name, q.type, entry) };
}

export async function startDnsStandIn(opts: { host?: string; zones?: Zones; zoneFile?: string } = {}): Promise<DnsStandIn> {
  const host = opts.host ?? '127.0.0.1';
  let zones: Zones = opts.zones ?? (opts.zoneFile ? (JSON.parse(await readFile(opts.zoneFile, 'utf8')) as Zones) : {});
  const queries: string[] = [];

  const handle = (buf: Buffer): Buffer | null => {
    let query: packet.Packet;
    try {
      query = packet.decode(buf);
    } catch {
      return null;
    }
    const q = query.questions?.[0];
    if (q) queries.push(`${q.type} ${q.name.toLowerCase()}`);
    const reply = respond(query, zones);
    return reply ? packet.encode(reply) : null;
  };

  const makeUdp = (): dgram.Socket => {
    const sock = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    sock.on('message', (msg, rinfo) => {
      let out = handle(msg);
      if (!out) return;
      if (out.length > UDP_MAX_BYTES) {
        const decoded = packet.decode(out);
        out = packet.encode({ ...decoded, flags: (decoded.flags ?? 0) | packet.TRUNCATED_RESPONSE, answers: [] });
      }
      sock.send(out, rinfo.port, rinfo.address);
    });
    return sock;
  };

  const tcp = net.createServer((socket) => {
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2) {
        const len = pending.readUInt16BE(0);
        if (pending.length < 2 + len) break;
        const out = handle(pending.subarray(2, 2 + len));
        pending = pending.subarray(2 + len);
        if (out) {
          const framed = Buffer.alloc(2 + out.length);
          framed.writeUInt16BE(out.length, 0);
          out.copy(framed, 2);
          socket.write(framed);
        }
      }
    });
    socket.on('error', () => socket.destroy());
  });

  // UDP and TCP share one port number: bind UDP on a free port, then TCP on the same one (retry on a clash).
  let port = 0;
  let udp: dgram.Socket;
  for (let attempt = 0; ; attempt++) {
    udp = makeUdp();
    await new Promise<void>((resolve, reject) => {
      const sock = udp;
      sock.once('error', reject);
      sock.bind(0, host, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    port = udp.address().port;
    const sock = udp;
    const ok = await new Promise<boolean>((resolve) => {
      tcp.once('error', () => resolve(false));
      tcp.listen(port, host, () => resolve(true));
    });
    if (ok) break;
    sock.close();
    if (attempt > 20) throw new Error('DNS stand-in: no free port for both UDP and TCP');
  }

  const udpSocket = udp;
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return {
    host,
    port,
    address,
    queries,
    setZones(next: Zones) {
      zones = next;
    },
    stop: () =>
      Promise.all([
        new Promise<void>((r) => udpSocket.close(() => r())),
        new Promise<void>((r) => {
          tcp.close(() => r());
        }),
      ]).then(() => undefined),
  };
}
