import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { requestLocal } from '../../core/outbound-http';
import { SiteDataExecutor } from '../../dataplane/agent/data-executor';
import { RealNodeExecutor } from '../../dataplane/agent/executors';
import type { AgentPart, AgentSite, AgentTask, SiteDataWork } from '../../dataplane/agent/wire';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import { SiteBackups } from '../../dataplane/site-backup';
import { staticDriver } from '../support/static-driver';

/**
 * docs/decisions/0360-data-steps-on-the-node.md: a hosted site's data steps run on its node with
 * its runtime driver's layout, not Ghost's. The test-only static-folder driver keeps its files in
 * `public/` and no database: the agent's data executor captures and restores that folder through
 * the recovery store, seals and pins the release, and refuses a database step (its layout has no
 * database file), bytes that are not the point's and a task that names no part.
 */

describe("a site's data steps on its node, by its driver's layout", () => {
  const root = mkdtempSync(path.join(tmpdir(), 'data-steps-'));
  const plane = new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, 'sites'),
    drivers: new RuntimeDrivers([staticDriver(path.join(root, 'runtimes'))]),
  });
  const machine = new RealNodeExecutor(plane);
  const data = new SiteDataExecutor(plane.sites, new SiteBackups(new FsBlobStore(path.join(root, 'blobs'))));
  const host = 'kept.sites.localhost';
  const site: AgentSite = {
    siteId: 'kept-site',
    slug: 'kept',
    name: 'Kept',
    url: `http://${host}/`,
    hosts: [host],
    runtime: { name: 'static-folder', version: '1.0.0', integrity: 'none', memoryFloorMb: 64 },
  };
  const task = (step: string, work?: SiteDataWork): AgentTask => ({
    id: `op:${step}`,
    operation_id: 'op',
    operation_type: 'restore',
    step,
    site,
    ...(work ? { data: work } : {}),
  });
  const part = (r: Record<string, unknown> | null): AgentPart => ({
    sha256: String(r?.sha256),
    sizeBytes: Number(r?.size_bytes),
  });
  const page = async (p: string) => {
    const edge = new URL(plane.edgeUrl);
    return requestLocal(Number(edge.port), { method: 'GET', path: p, headers: { host }, timeoutMs: 5_000 });
  };
  const release = { name: 'static-folder', version: '1.0.0', image: 'static-folder:1.0.0', digest: 'none' };

  beforeAll(async () => {
    await mkdir(path.join(root, 'sites'), { recursive: true });
    await plane.start();
    for (const step of ['pull_image', 'start_runtime', 'health_check']) await machine.run(task(step), () => undefined);
  });
  afterAll(async () => {
    await plane.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("captures the driver's content folder and puts it back while the site is stopped", async () => {
    const content = plane.sites.layout(site.siteId, 'static-folder').content;
    await writeFile(path.join(content, 'about.html'), 'about us');
    const captured = await data.run(task('capture_content'));
    expect(captured).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size_bytes: expect.any(Number) });

    await writeFile(path.join(content, 'about.html'), 'changed');
    await writeFile(path.join(content, 'later.html'), 'added later');
    await machine.run(task('stop_runtime'), () => undefined);
    expect(await data.run(task('restore_content', { point: { content: part(captured) } }))).toBeNull();
    // Restoring: the edge answers 503 until the next step starts it.
    expect((await page('/')).status).toBe(503);
    expect(await readFile(path.join(content, 'about.html'), 'utf8')).toBe('about us');
    await expect(readFile(path.join(content, 'later.html'), 'utf8')).rejects.toThrow();
    await machine.run(task('start_runtime'), () => undefined);
    expect((await page('/about.html')).body).toBe('about us');
  });

  it('seals the release and pins it only when the point holds that one', async () => {
    const sealed = part(await data.run(task('capture_release', { release })));
    expect(await data.run(task('pin_release', { point: { release: sealed }, release }))).toBeNull();
    await expect(
      data.run(task('pin_release', { point: { release: sealed }, release: { ...release, version: '2.0.0' } })),
    ).rejects.toMatchObject({ code: 'release_mismatch' });
  });

  it('refuses what the driver cannot do, and bytes that are not the point', async () => {
    // This runtime's layout has no database file: nothing to capture or put back as one.
    await expect(data.run(task('capture_database'))).rejects.toMatchObject({ code: 'capture_failed' });
    const captured = part(await data.run(task('capture_content')));
    await expect(data.run(task('restore_database', { point: { database: captured } }))).rejects.toMatchObject({
      code: 'restore_failed',
    });
    await expect(
      data.run(task('restore_content', { point: { content: { ...captured, sizeBytes: captured.sizeBytes + 1 } } })),
    ).rejects.toMatchObject({ code: 'snapshot_corrupt' });
    await expect(data.run(task('restore_content', {}))).rejects.toMatchObject({ code: 'recovery_point_incomplete' });
  });
});
