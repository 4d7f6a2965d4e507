import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { outcomesOf, parseAccessLine, renderNginxEdgeConfig } from '../../dataplane/edge-nginx-config';
import { NginxEdgeProcess } from '../../dataplane/edge-nginx-process';
import { freePort } from '../../dataplane/supervisor';
import { ensureNginxInstalled, nginxBinary } from '../../infra/nginx';
import { edgeWith } from './edge-engines';

/** The nginx engine's own parts (docs/decisions/0310-nginx-edge-engine.md): access lines, and what a killed run leaves. */

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

  it('stops the workers a killed master left listening, at the next start in the same folder', async () => {
    await ensureNginxInstalled();
    const root = mkdtempSync(path.join(tmpdir(), 'edge-nginx-stale-'));
    const prefix = path.join(root, 'edge-nginx', '1');
    try {
      const conf = (port: number) =>
        renderNginxEdgeConfig(new Map(), {
          host: '127.0.0.1',
          port,
          controlPort: 1,
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
