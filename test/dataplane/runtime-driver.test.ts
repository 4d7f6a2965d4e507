import { mkdtempSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { requestLocal } from '../../core/outbound-http';
import { RealNodeExecutor } from '../../dataplane/agent/executors';
import type { AgentSite, AgentTask } from '../../dataplane/agent/wire';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import { ghostDriver } from '../../dataplane/runtimes/ghost';
import { staticDriver } from '../support/static-driver';

/**
 * docs/decisions/0285-one-road-to-a-machine.md: adding a runtime is one driver file. This test-only
 * driver serves a site's `public/` folder with a few lines of Node; the node agent's executor runs
 * every machine step of a site on it — install, start (in its sandbox), set-up, probe, drain, stop,
 * resume, delete — through the same site host, supervisor and edge Ghost uses, none of which is
 * changed for it.
 */

describe('a runtime added as one driver', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'static-runtime-'));
  const plane = new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, 'sites'),
    drivers: new RuntimeDrivers([ghostDriver, staticDriver(path.join(root, 'runtimes'))]),
  });
  const executor = new RealNodeExecutor(plane);
  const host = 'folder.sites.localhost';
  const site: AgentSite = {
    siteId: 'static-site',
    slug: 'folder',
    name: 'Folder',
    url: `http://${host}/`,
    hosts: [host],
    runtime: { name: 'static-folder', version: '1.0.0', integrity: 'none', memoryFloorMb: 64 },
  };
  const step = (name: string) => {
    const task: AgentTask = { id: `op:${name}`, operation_id: 'op', operation_type: 'provision', step: name, site };
    return executor.run(task, () => undefined);
  };
  const viaEdge = async (p = '/') => {
    const edge = new URL(plane.edgeUrl);
    return requestLocal(Number(edge.port), { method: 'GET', path: p, headers: { host }, timeoutMs: 5_000 });
  };

  beforeAll(async () => {
    await mkdir(path.join(root, 'sites'), { recursive: true });
    await plane.start();
  });
  afterAll(() => plane.stop());

  it('runs every machine step of a site through the same host, supervisor and edge as Ghost', async () => {
    await step('pull_image');
    await step('start_runtime');
    expect(await step('configure_site')).toEqual({ owner_email: `owner@${host}` });
    await step('health_check');
    const home = await viaEdge();
    expect(home.status).toBe(200);
    expect(home.body).toBe('<h1>It works</h1>');
    expect(home.headers['x-static-version']).toBe('static-folder-1.0.0');
    // Its process runs in its sandbox like any other workload: its own uid, reached on its socket.
    const st = plane.supervisor.status(site.siteId);
    expect(st?.uid).not.toBeNull();
    expect(st?.socketPath).toBeTruthy();

    // The site's content, where the driver's layout says it lives.
    const content = plane.sites.layout(site.siteId, 'static-folder').content;
    await writeFile(path.join(content, 'about.html'), 'about us');
    expect((await viaEdge('/about.html')).body).toBe('about us');

    await step('drain_traffic');
    expect((await viaEdge()).status).toBe(503);
    await step('stop_runtime');
    expect(plane.sites.process(site.siteId)?.status).toBe('stopped');
    // The same release again: resumed, not reinstalled.
    await step('start_runtime');
    expect((await viaEdge('/about.html')).status).toBe(200);
    expect(await executor.ensure(site, 'running')).toBe('unchanged');

    await step('delete_site');
    expect((await viaEdge()).status).toBe(404);
    expect(await readFile(path.join(content, 'about.html'), 'utf8').catch(() => null)).toBeNull();
  });

  it('refuses a runtime the node has no driver for, naming the ones it has', async () => {
    const other = { ...site, siteId: 'other-site', runtime: { ...site.runtime, name: 'php' } };
    const task: AgentTask = { id: 'op2:pull', operation_id: 'op2', operation_type: 'provision', step: 'pull_image', site: other };
    await expect(executor.run(task, () => undefined)).rejects.toThrow(
      /no driver for runtime php \(it runs ghost, static-folder\)/,
    );
  });
});
