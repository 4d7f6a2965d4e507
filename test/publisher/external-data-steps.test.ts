import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { RealNodeExecutor } from '../../dataplane/agent/executors';
import { type AgentSite, MAX_RECOVERY_PART_BYTES, NODE_AGENT_PATH, NODE_TOKEN_HEADER } from '../../dataplane/agent/wire';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import { RECOVERY_POINT_REGION } from '../../dataplane/site-backup';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import { NodeTasks, nodeTaskModel } from '../../nodes/tasks';
import { type CuttingProxy, cuttingProxy } from '../support/cutting-proxy';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';
import { staticDriver } from '../support/static-driver';

/**
 * docs/decisions/0375-recovery-parts-over-the-agent-api.md: with `PUBLISHER_HOSTED_AGENT=external` the
 * hosted node's agent (the agent class over HTTP, as `platform nodes agent`) runs a site's data steps:
 * a capture uploads its part through the agent API (the platform checks its SHA-256 and size and keeps
 * it in the recovery store), a restore downloads the part its task names. Before, the agent had no
 * recovery store and answered every data step `unknown_step`. The part calls refuse another node's
 * task, a part the task does not name, bytes that are not what they claim and a part over the bound.
 * docs/decisions/0390-resumable-part-transfers.md: the agent reaches the bridge through a TCP proxy that
 * cuts a transfer mid-way; the upload and the download resume, sending only the rest.
 */
jest.setTimeout(120_000);

let t: TestPlatform;
let agent: NodeAgent;
let plane: DataPlane;
let root: string;
let nodeTasks: NodeTasks;
let hostedToken: string;
let proxy: CuttingProxy;
const agentLog: string[] = [];
const host = `${uniqueName('kept')}.sites.localhost`;
const site: AgentSite = {
  siteId: uniqueName('ext-site'),
  slug: 'ext-kept',
  name: 'Kept',
  url: `http://${host}/`,
  hosts: [host],
  runtime: { name: 'static-folder', version: '1.0.0', integrity: 'none', memoryFloorMb: 64 },
};
const release = { name: 'static-folder', version: '1.0.0', image: 'static-folder:1.0.0', digest: 'none' };

const tasks = () => t.platform.conn.collection('publisher_node_tasks');
const store = () => t.platform.services.publisher.real.backups.store;
const call = (token: string, method: 'GET' | 'POST', p: string, body?: Buffer, type = 'application/octet-stream') =>
  fetch(`${t.bridgeUrl}${NODE_AGENT_PATH}${p}`, {
    method,
    headers: { [NODE_TOKEN_HEADER]: token, ...(body ? { 'content-type': type } : {}) },
    body,
  });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A data step of the hosted node, opened as the publisher opens one, run by the external agent. */
const step = (name: string, data: Record<string, unknown> = {}) => {
  const op = uniqueName('op');
  return nodeTasks.run({
    id: `${op}:${name}`,
    attempt: 1,
    nodeId: HOSTED_NODE_ID,
    siteId: site.siteId,
    operationId: op,
    operationType: 'restore',
    step: name,
    site,
    data,
  });
};

/** A data task of the hosted node held by the agent (claimed by its session), for the refusals. */
async function held(stepName: string, data: Record<string, unknown> = {}): Promise<string> {
  const id = `held:${uniqueName('task')}`;
  await tasks().insertOne({
    _id: id as never,
    nodeId: HOSTED_NODE_ID,
    siteId: site.siteId,
    operationId: 'held',
    operationType: 'restore',
    step: stepName,
    site,
    data,
    status: 'claimed',
    claimedBy: agent.session,
    claimedAt: new Date(),
    createdAt: new Date(),
  });
  return id;
}

beforeAll(async () => {
  t = await startTestPlatform({ PUBLISHER_HOSTED_AGENT: 'external' });
  root = await mkdtemp(path.join(os.tmpdir(), 'external-data-'));
  await mkdir(path.join(root, 'sites'), { recursive: true });
  plane = new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, 'sites'),
    drivers: new RuntimeDrivers([staticDriver(path.join(root, 'runtimes'))]),
  });
  await plane.start();
  // The site runs on the agent's plane (its machine steps, run here directly).
  const machine = new RealNodeExecutor(plane);
  for (const s of ['pull_image', 'start_runtime', 'health_check'])
    await machine.run({ id: s, operation_id: 'boot', operation_type: 'create', step: s, site }, () => undefined);
  hostedToken = (await t.platform.services.publisher.nodes.hostedToken())!;
  proxy = await cuttingProxy(t.bridgeUrl);
  agent = new NodeAgent({
    apiUrl: proxy.url,
    log: (line) => agentLog.push(line),
    token: hostedToken,
    dataDir: root,
    edgePort: 0,
    plane,
    executor: 'real',
    claimWaitMs: 2_000,
  });
  await agent.start();
  nodeTasks = new NodeTasks({
    tasks: nodeTaskModel(t.platform.conn),
    nodes: t.platform.services.publisher.nodes,
    waitMs: 60_000,
  });
});
afterAll(async () => {
  await agent?.stop();
  await plane?.stop();
  await proxy?.close();
  await t?.stop();
  await rm(root, { recursive: true, force: true });
});

describe("an external hosted agent's data steps", () => {
  it("captures a site's content through the agent API into the recovery store, then restores it from there", async () => {
    const content = plane.sites.layout(site.siteId, 'static-folder').content;
    await writeFile(path.join(content, 'about.html'), 'about us');
    const captured = await step('capture_content');
    expect(captured).toEqual({ sha256: expect.stringMatching(/^[0-9a-f]{64}$/), size_bytes: expect.any(Number) });
    // The platform kept the bytes it was sent, under their hash; the task records the upload.
    const part = { sha256: String(captured!.sha256), sizeBytes: Number(captured!.size_bytes) };
    expect(await store().stat(RECOVERY_POINT_REGION, part.sha256)).toBe(part.sizeBytes);
    expect(await tasks().findOne({ step: 'capture_content', siteId: site.siteId })).toMatchObject({
      status: 'succeeded',
      claimedBy: agent.session,
      uploaded: [part.sha256],
    });

    await writeFile(path.join(content, 'about.html'), 'changed');
    await writeFile(path.join(content, 'later.html'), 'added later');
    await plane.sites.stop(site.siteId);
    expect(await step('restore_content', { point: { content: part } })).toBeNull();
    expect(await readFile(path.join(content, 'about.html'), 'utf8')).toBe('about us');
    await expect(readFile(path.join(content, 'later.html'), 'utf8')).rejects.toThrow();

    // The release's manifest goes the same road, and a pin reads it back.
    const sealed = await step('capture_release', { release });
    const pinned = { sha256: String(sealed!.sha256), sizeBytes: Number(sealed!.size_bytes) };
    expect(await step('pin_release', { point: { release: pinned }, release })).toBeNull();
    await expect(
      step('pin_release', { point: { release: pinned }, release: { ...release, version: '2.0.0' } }),
    ).rejects.toMatchObject({ code: 'release_mismatch' });
  });

  it("refuses another node's task, a part the task does not name, bytes that are not what they claim and a part over the bound", async () => {
    const bytes = Buffer.from('a captured part');
    const named = { sha256: sha(bytes), sizeBytes: bytes.length };
    // Kept through a capture task the agent holds: its upload is the only way in.
    const capture = await held('capture_content');
    const up = await call(hostedToken, 'POST', `/tasks/${encodeURIComponent(capture)}/parts/${named.sha256}`, bytes);
    expect([up.status, ((await up.json()) as any).data]).toEqual([200, { sha256: named.sha256, size_bytes: bytes.length }]);

    const restore = await held('restore_content', { point: { content: named } });
    const own = await call(hostedToken, 'GET', `/tasks/${encodeURIComponent(restore)}/parts/${named.sha256}`);
    expect([own.status, own.headers.get('content-type'), own.headers.get('cache-control')]).toEqual([
      200,
      'application/octet-stream',
      'no-store',
    ]);
    expect(Buffer.from(await own.arrayBuffer()).equals(bytes)).toBe(true);

    // Another node's token: the same part of the same task is 404, and so is its upload.
    const { accountId } = await t.createKey({ account: uniqueName('ext-data') });
    const other = await t.platform.services.publisher.nodes.register(accountId, uniqueName('node'));
    for (const [method, task, body] of [
      ['GET', restore, undefined],
      ['POST', capture, bytes],
    ] as const) {
      const res = await call(other.token, method, `/tasks/${encodeURIComponent(task)}/parts/${named.sha256}`, body);
      expect([res.status, ((await res.json()) as any).error.code]).toEqual([404, 'task_not_found']);
    }
    // A part the task does not name, even one the store holds: 404 to the holder too.
    const unnamed = await held('restore_content', { point: { content: { sha256: 'f'.repeat(64), sizeBytes: 1 } } });
    const res = await call(hostedToken, 'GET', `/tasks/${encodeURIComponent(unnamed)}/parts/${named.sha256}`);
    expect([res.status, ((await res.json()) as any).error.code]).toEqual([404, 'part_not_found']);
    // An upload to a step that captures nothing.
    const wrongStep = await call(hostedToken, 'POST', `/tasks/${encodeURIComponent(restore)}/parts/${named.sha256}`, bytes);
    expect(wrongStep.status).toBe(404);

    // Bytes that do not hash to the name they are sent under: 422, nothing kept.
    const forged = Buffer.from('other bytes');
    const bad = await call(hostedToken, 'POST', `/tasks/${encodeURIComponent(capture)}/parts/${'0'.repeat(64)}`, forged);
    expect([bad.status, ((await bad.json()) as any).error.code]).toEqual([422, 'part_mismatch']);
    expect(await store().stat(RECOVERY_POINT_REGION, '0'.repeat(64))).toBeNull();
    expect(await store().stat(RECOVERY_POINT_REGION, sha(forged))).toBeNull();

    // A capture whose result names a part it did not upload fails the step.
    const report = await call(
      hostedToken,
      'POST',
      `/tasks/${encodeURIComponent(capture)}/result`,
      Buffer.from(
        JSON.stringify({ session: agent.session, outcome: { ok: true, result: { sha256: sha(forged), size_bytes: 11 } } }),
      ),
      'application/json',
    );
    expect(report.status).toBe(200);
    expect(await tasks().findOne({ _id: capture as never })).toMatchObject({
      status: 'failed',
      error: { code: 'capture_failed' },
    });

    // Past the bound, refused on the stated length before a byte is read.
    const capture2 = await held('capture_content');
    const url = new URL(`${t.bridgeUrl}${NODE_AGENT_PATH}/tasks/${encodeURIComponent(capture2)}/parts/${named.sha256}`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          headers: {
            [NODE_TOKEN_HEADER]: hostedToken,
            'content-type': 'application/octet-stream',
            'content-length': String(MAX_RECOVERY_PART_BYTES + 1),
          },
        },
        (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
          req.destroy();
        },
      );
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(status).toBe(413);
  });

  it("resumes a capture's upload and a restore's download cut mid-way, sending only the rest", async () => {
    const MiB = 1024 * 1024;
    const content = plane.sites.layout(site.siteId, 'static-folder').content;
    const big = randomBytes(20 * MiB);
    await writeFile(path.join(content, 'big.bin'), big);
    // The upload's connection is cut after 10 MiB: the platform holds its whole pieces, the agent sends the rest.
    proxy.reset();
    proxy.cutOnce('up', 10 * MiB);
    const captured = await step('capture_content');
    const part = { sha256: String(captured!.sha256), sizeBytes: Number(captured!.size_bytes) };
    expect(proxy.cutAt).toBe(10 * MiB);
    expect(part.sizeBytes).toBeGreaterThan(20 * MiB);
    expect(await store().stat(RECOVERY_POINT_REGION, part.sha256)).toBe(part.sizeBytes);
    const upResent = proxy.sent.up - proxy.cutAt!;
    expect(upResent).toBeLessThan(part.sizeBytes);
    expect(upResent).toBeGreaterThan(part.sizeBytes - 10 * MiB);
    expect(agentLog.some((l) => /upload .* broke .*resuming/.test(l))).toBe(true);
    // Nothing of the upload is left held once the task ended.
    expect(await tasks().findOne({ step: 'capture_content', uploaded: part.sha256 })).not.toHaveProperty('partUpload');

    // The download's connection is cut after 10 MiB: the agent asks for the rest (Range), 206.
    await writeFile(path.join(content, 'big.bin'), 'changed');
    await plane.sites.stop(site.siteId);
    proxy.reset();
    proxy.cutOnce('down', 10 * MiB);
    expect(await step('restore_content', { point: { content: part } })).toBeNull();
    expect(sha(await readFile(path.join(content, 'big.bin')))).toBe(sha(big));
    const downResent = proxy.sent.down - proxy.cutAt!;
    expect(downResent).toBeLessThan(part.sizeBytes);
    expect(downResent).toBeGreaterThan(part.sizeBytes - 10 * MiB);
    expect(agentLog.some((l) => /download after \d+ bytes broke .*resuming/.test(l))).toBe(true);
    await rm(path.join(content, 'big.bin'), { force: true });
  });

  it('answers a range of a part (206), refuses a range it cannot satisfy (416) and an upload at an offset it does not hold (409)', async () => {
    const bytes = Buffer.from('a ranged part!!');
    const named = { sha256: sha(bytes), sizeBytes: bytes.length };
    const capture = await held('capture_content');
    const partPath = `${t.bridgeUrl}${NODE_AGENT_PATH}/tasks/${encodeURIComponent(capture)}/parts/${named.sha256}`;
    const send = (body: Buffer, headers: Record<string, string>) =>
      fetch(partPath, {
        method: 'POST',
        headers: { [NODE_TOKEN_HEADER]: hostedToken, 'content-type': 'application/octet-stream', ...headers },
        body,
      });
    // Nothing held: a resume from byte 5 is refused with what is held, and the status says so.
    const early = await send(bytes.subarray(5), { 'upload-offset': '5', 'upload-length': String(bytes.length) });
    expect([early.status, ((await early.json()) as any).error]).toEqual([
      409,
      expect.objectContaining({ code: 'upload_offset_mismatch', details: { offset: 0 } }),
    ]);
    const status = await fetch(`${partPath}/upload`, { headers: { [NODE_TOKEN_HEADER]: hostedToken } });
    expect(((await status.json()) as any).data).toEqual({ sha256: named.sha256, offset: 0, length: null });
    // The whole part's stated length is what the bound applies to.
    const over = await send(bytes, { 'upload-offset': '0', 'upload-length': String(MAX_RECOVERY_PART_BYTES + 1) });
    expect([over.status, ((await over.json()) as any).error.code]).toEqual([413, 'part_too_large']);
    const whole = await send(bytes, { 'upload-offset': '0', 'upload-length': String(bytes.length) });
    expect(whole.status).toBe(200);

    const restore = await held('restore_content', { point: { content: named } });
    const get = (range: string) =>
      fetch(`${t.bridgeUrl}${NODE_AGENT_PATH}/tasks/${encodeURIComponent(restore)}/parts/${named.sha256}`, {
        headers: { [NODE_TOKEN_HEADER]: hostedToken, range },
      });
    const rest = await get('bytes=5-');
    expect([rest.status, rest.headers.get('content-range'), rest.headers.get('content-length')]).toEqual([
      206,
      `bytes 5-14/15`,
      '10',
    ]);
    expect(Buffer.from(await rest.arrayBuffer()).equals(bytes.subarray(5))).toBe(true);
    for (const bad of ['bytes=15-', 'bytes=20-30', 'lines=1-2', 'bytes=0-1,4-5']) {
      const res = await get(bad);
      expect([bad, res.status, res.headers.get('content-range'), ((await res.json()) as any).error.code]).toEqual([
        bad,
        416,
        'bytes */15',
        'range_not_satisfiable',
      ]);
    }
  });
});
