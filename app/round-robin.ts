import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small round-robin HTTP front for local replicas (`platform start --replicas N`): each request
 * goes to the next target in the list. Built on node:http (docs/decisions/0200-replicas-and-kafka-cluster.md):
 * it only has to pick a target and pass a request through, and it must know one thing a general
 * proxy does not: whether a failed attempt can be sent again.
 *
 * - A target that refuses the connection (a replica that died or is restarting) never saw the
 *   request: the next target gets it, and the refusing one is skipped for `downMs`.
 * - A target that fails after the request was sent may have acted on it: the client gets 502
 *   `upstream_failed` and decides (a create with an Idempotency-Key is safe to send again).
 *
 * Request bodies are read whole before the first attempt, so a refused attempt can be replayed;
 * this front is for local runs and trials, not for large uploads in production (use the load
 * balancer of the platform you deploy on; docs/production.md). No WebSocket upgrades.
 */
export interface RoundRobinOptions {
  /** Base URLs of the targets, e.g. `http://127.0.0.1:18080`. */
  targets: string[];
  /** How long a target that refused a connection is skipped: 1 s. */
  downMs?: number;
}

export class RoundRobin {
  private targets: URL[];
  private next = 0;
  private readonly downUntil = new Map<string, number>();
  private readonly downMs: number;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private server: http.Server | undefined;
  /** Requests passed on, and attempts refused by a target and sent to the next. */
  readonly counts = { requests: 0, rerouted: 0, failed: 0 };

  constructor(opts: RoundRobinOptions) {
    this.targets = opts.targets.map((t) => new URL(t));
    this.downMs = opts.downMs ?? 1000;
  }

  setTargets(targets: string[]): void {
    this.targets = targets.map((t) => new URL(t));
  }

  /** Listens on `host:port` (0: a free port); returns the front's base URL. */
  async listen(port: number, host: string): Promise<string> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const a = server.address() as AddressInfo;
    return `http://${host}:${a.port}`;
  }

  async close(): Promise<void> {
    this.agent.destroy();
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /** The targets in the order to try: round-robin start, skipping those marked down (unless all are). */
  private order(): URL[] {
    const n = this.targets.length;
    const start = this.next++ % Math.max(1, n);
    const ring = Array.from({ length: n }, (_, k) => this.targets[(start + k) % n]);
    const now = Date.now();
    const up = ring.filter((t) => (this.downUntil.get(t.host) ?? 0) <= now);
    return up.length > 0 ? [...up, ...ring.filter((t) => !up.includes(t))] : ring;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.counts.requests++;
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      res.destroy();
      return;
    }
    const body = Buffer.concat(chunks);
    for (const target of this.order()) {
      const outcome = await this.attempt(target, req, body, res);
      if (outcome === 'done') return;
      if (outcome === 'refused') {
        this.counts.rerouted++;
        this.downUntil.set(target.host, Date.now() + this.downMs);
        continue;
      }
      // Sent, then failed: not repeated here (the target may have acted on it).
      this.counts.failed++;
      return reply502(res, 'the replica failed while handling the request; retry (with the same Idempotency-Key for a create)');
    }
    this.counts.failed++;
    reply502(res, 'no replica answers');
  }

  private attempt(
    target: URL,
    req: http.IncomingMessage,
    body: Buffer,
    res: http.ServerResponse,
  ): Promise<'done' | 'refused' | 'failed'> {
    return new Promise((resolve) => {
      const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
      delete headers['transfer-encoding'];
      delete headers.connection;
      const up = http.request(
        {
          protocol: target.protocol,
          hostname: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers,
          agent: this.agent,
        },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          upRes.on('error', () => res.destroy());
          upRes.on('end', () => resolve('done'));
          res.on('close', () => resolve('done'));
        },
      );
      let connected = false;
      up.on('socket', (s) => {
        if (!s.connecting) connected = true;
        else s.once('connect', () => (connected = true));
      });
      up.on('error', (err: NodeJS.ErrnoException) => {
        if (res.headersSent) {
          res.destroy();
          return resolve('done');
        }
        // Refused before any byte went out: the request can go to the next replica.
        const refused = err.code === 'ECONNREFUSED' || (!connected && err.code === 'ECONNRESET');
        resolve(refused ? 'refused' : 'failed');
      });
      up.end(body);
    });
  }
}

function reply502(res: http.ServerResponse, message: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(502, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { code: 'upstream_failed', message } }));
}
