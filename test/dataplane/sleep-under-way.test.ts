import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RealNodeExecutor } from '../../dataplane/agent/executors';
import type { AgentSite, AgentTask } from '../../dataplane/agent/wire';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import { staticDriver } from '../support/static-driver';

/**
 * A request under way keeps its site awake (docs/decisions/0420-requests-under-way.md): the edge's
 * engines know a request when it ends (nginx's access log) or starts (the Node engine), so one that
 * lasts longer than the idle time, with nothing else for the site, made it look idle and the sleep
 * cut it. The site's process counts its own requests (the sandbox's preload) and the sleep keeper
 * asks before it puts a site to sleep. The folder runtime in its sandbox answers `/slow/<ms>` after
 * that long; the idle time here is a fifth of it. Both engines.
 */

const IDLE_MS = 600;
const SLOW_MS = 3_000;

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'sleep-under-way-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

function get(port: number, host: string, p: string): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(res.complete ? { status: res.statusCode!, body } : { error: 'cut short' }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
  });
}

for (const engine of ['nginx', 'node'] as const) {
  describe(`with the ${engine} engine`, () => {
    let plane: DataPlane;
    const host = `slow-${engine}.sites.localhost`;
    const site: AgentSite = {
      siteId: `slow-${engine}`,
      slug: `slow-${engine}`,
      name: 'slow',
      url: `http://${host}/`,
      hosts: [host],
      runtime: { name: 'static-folder', version: '1.0.0', integrity: 'none', memoryFloorMb: 64 },
      sleeps: true,
    } as AgentSite;

    beforeAll(async () => {
      plane = new DataPlane({
        edgePort: 0,
        host: '127.0.0.1',
        sitesRoot: path.join(root, engine, 'sites'),
        cacheRoot: path.join(root, engine, 'cache'),
        drivers: new RuntimeDrivers([staticDriver(path.join(root, engine, 'runtimes'))]),
        sleep: { idleMs: IDLE_MS, memoryMb: null, sweepMs: 100 },
        env: { ...process.env, EDGE_ENGINE: engine },
      });
      await plane.start();
      const executor = new RealNodeExecutor(plane);
      for (const step of ['pull_image', 'start_runtime', 'health_check'])
        await executor.run(
          { id: `op:${step}`, operation_id: 'op', operation_type: 'provision', step, site } as AgentTask,
          () => undefined,
        );
    }, 60_000);
    afterAll(() => plane?.stop());

    it('does not put a site to sleep under a request longer than the idle time, and sleeps it once answered', async () => {
      const port = Number(new URL(plane.edgeUrl).port);
      const slept: number[] = [];
      plane.sites.power.on('slept', () => slept.push(Date.now()));
      expect(await get(port, host, '/')).toMatchObject({ status: 200 });

      const t0 = Date.now();
      const answer = await get(port, host, `/slow/${SLOW_MS}`);
      const answeredAt = Date.now();
      expect(answer).toEqual({ status: 200, body: 'slow answer' });
      expect(answeredAt - t0).toBeGreaterThanOrEqual(SLOW_MS - 50);
      expect(slept.filter((at) => at < answeredAt)).toEqual([]);

      // Answered: idle from here, it sleeps.
      const deadline = Date.now() + 15_000;
      while (plane.sites.process(site.siteId)?.status !== 'sleeping' && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(plane.sites.process(site.siteId)?.status).toBe('sleeping');
      expect(await plane.sites.requestsUnderWay(site.siteId)).toBeNull();
    }, 60_000);
  });
}
