import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { outcomesOf, parseAccessLine, renderNginxEdgeConfig } from '../../dataplane/edge-nginx-config';
import { NginxEdgeProcess } from '../../dataplane/edge-nginx-process';
import { freePort } from '../../dataplane/supervisor';
import { ensureNginxInstalled, nginxBinary } from '../../infra/nginx';
import { edgeWith } from './edge-engines';

/** The nginx engine's own parts (docs/decisions/0310-nginx-edge-engine.md, 0320): access lines, route links, and what a killed run leaves. */

const answers = (port: number) => () =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
/** Running (a zombie, killed but not yet reaped by init, is not). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

describe('the nginx edge engine', () => {
  it('counts access lines as the node engine counts its outcomes', () => {
    const line = (o: object) =>
      parseAccessLine(JSON.stringify({ kind: 'proxied', upstream: '127.0.0.1:1', upstreamHeaderTime: '0.001', ...o }))!;
    expect(outcomesOf(line({ status: 200 }))).toEqual(['proxied']);
    expect(outcomesOf(line({ status: 502 }))).toEqual(['proxied']); // the workload's own 502
    expect(outcomesOf(line({ status: 502, upstreamHeaderTime: '-' }))).toEqual(['proxied', 'upstream_error']);
    expect(outcomesOf(line({ status: 400, upstream: '', kind: 'control' }))).toEqual(['bad_request']);
    expect(outcomesOf(line({ status: 404, kind: 'control' }))).toEqual([]); // counted by the control listener
    expect(parseAccessLine('{"host":"a"')).toBeNull();
  });

  it('reloads only when the rendered configuration changes (routing what is already routed costs nothing)', async () => {
    const edge = await edgeWith('nginx', { port: 0 });
    await edge.listen();
    try {
      const proc = (edge as unknown as { nginx: { proc: NginxEdgeProcess } }).nginx.proc;
      const route = { target: { host: '127.0.0.1', port: 9 }, state: 'running' as const, owner: 'x' };
      edge.upsert(['x.sites.localhost'], route);
      await edge.settled();
      const after = proc.reloads;
      edge.upsert(['x.sites.localhost'], { ...route });
      edge.setState('nobody', 'stopped');
      await edge.settled();
      expect(proc.reloads).toBe(after);
      edge.setState('x', 'stopped');
      await edge.settled();
      expect(proc.reloads).toBe(after + 1);
    } finally {
      await edge.close();
    }
  });

  it('switches, stops and removes a route on a unix socket through its link, without a reload (decision 0320)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'edge-links-'));
    const servers = ['a', 'b'].map((name) =>
      http.createServer((req, res) => res.end(JSON.stringify({ name, forwardedFor: req.headers['x-forwarded-for'] }))),
    );
    const sockets = servers.map((_s, i) => path.join(dir, `${i}.sock`));
    await Promise.all(servers.map((s, i) => new Promise<void>((r) => s.listen(sockets[i], r))));
    const edge = await edgeWith('nginx', { port: 0 });
    await edge.listen();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const ask = (host: string) =>
      new Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: edge.port, headers: { host }, agent }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
        });
        req.on('error', reject);
      });
    const on = (i: number) => ({
      target: { host: '127.0.0.1', port: 0, socketPath: sockets[i] },
      state: 'running' as const,
      owner: 's',
    });
    try {
      const proc = (edge as unknown as { nginx: { proc: NginxEdgeProcess } }).nginx.proc;
      const long = `${'x'.repeat(200)}.sites.localhost`;
      edge.upsert(['shop.sites.localhost'], on(0));
      edge.upsert([long], { ...on(1), owner: 'other' });
      await edge.settled();
      const reloads = proc.reloads;
      expect(JSON.parse((await ask('Shop.Sites.Localhost:80')).body)).toEqual({ name: 'a', forwardedFor: '127.0.0.1' });
      expect(JSON.parse((await ask(long)).body).name).toBe('b');
      // Under load on kept-alive connections: every switch is seen by the next request, none fails.
      let failed = 0;
      let running = true;
      const seen = new Set<string>();
      const clients = Array.from({ length: 4 }, async () => {
        while (running) {
          const r = await ask('shop.sites.localhost').catch(() => null);
          if (r?.status === 200) seen.add(JSON.parse(r.body).name);
          else failed += 1;
        }
      });
      for (let i = 1; i <= 20; i++) {
        edge.upsert(['shop.sites.localhost'], on(i % 2));
        await new Promise((r) => setTimeout(r, 20));
      }
      running = false;
      await Promise.all(clients);
      expect(failed).toBe(0);
      expect([...seen].sort()).toEqual(['a', 'b']);
      expect(JSON.parse((await ask('shop.sites.localhost')).body).name).toBe('a'); // the last switch (20 % 2)
      edge.setState('s', 'stopped');
      const stopped = await ask('shop.sites.localhost');
      expect([stopped.status, stopped.headers['retry-after'], stopped.headers['x-edge-control']]).toEqual([503, '30', undefined]);
      edge.remove(['shop.sites.localhost']);
      expect((await ask('shop.sites.localhost')).status).toBe(404);
      await edge.settled();
      expect(proc.reloads).toBe(reloads);
    } finally {
      agent.destroy();
      await edge.close();
      for (const s of servers) s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops the workers a killed master left listening, at the next start in the same folder', async () => {
    await ensureNginxInstalled();
    const root = mkdtempSync(path.join(tmpdir(), 'edge-nginx-stale-'));
    const prefix = path.join(root, 'edge-nginx', '1');
    try {
      const conf = (port: number) =>
        renderNginxEdgeConfig(new Map(), {
          host: '127.0.0.1',
          port,
          prefix,
          controlSocket: path.join(prefix, 'control.sock'),
          publicScheme: 'http',
          upstreamTimeoutMs: 1_000,
          accessLog: path.join(prefix, 'access.log'),
        });
      const port = await freePort();
      const first = await NginxEdgeProcess.start(nginxBinary(), prefix, conf(port), answers(port));
      const workers = first.workers();
      expect(workers.length).toBe(1);
      process.kill(first.pid, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      expect(alive(workers[0])).toBe(true); // still listening on the port
      const again = await freePort();
      const second = await NginxEdgeProcess.start(nginxBinary(), prefix, conf(again), answers(again));
      await new Promise((r) => setTimeout(r, 100));
      expect(alive(workers[0])).toBe(false);
      expect(await answers(port)()).toBe(false);
      await second.stop();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
