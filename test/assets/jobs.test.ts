import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

const A = '/api/v1/assets';

/**
 * One job route (spec 4.3 `GET /jobs/{jobID}`, `POST /jobs/{jobID}/cancel`): every job id the Assets
 * area hands out — delete, bulk, AI (action, text extraction, generation), migration, workflow run —
 * is read there through REST and GraphQL, its `status_url` points there, and it is cancelled there
 * where its kind allows.
 */
describe('assets: one job route for every kind of job', () => {
  let t: TestPlatform;
  let blobDir: string;
  // An S3 endpoint that accepts connections and never answers: a migration against it stays running.
  let silent: Server;
  const sockets = new Set<Socket>();
  let silentUrl: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-jobs-'));
    // Delete jobs wait a minute before they run, so a queued one can be cancelled deterministically.
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir, ASSETS_DELETE_DELAY_MS: '60000', OUTBOUND_ALLOW_HOSTS: '127.0.0.1' });
    silent = createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    silent.close();
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, body: Buffer, name: string) => {
    const fd = new FormData();
    fd.append('key', uniqueName('file'));
    fd.append('file', new Blob([body]), name);
    const res = await fetch(`${t.bridgeUrl}${A}/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as any).data as { id: string; revision: number };
  };
  const png = () =>
    sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 20, b: 20 } } })
      .png()
      .toBuffer();
  const local = (url: string) => url.replace(/^https?:\/\/[^/]+/, '');
  const until = async <T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await read();
      if (ok(v)) return v;
      if (Date.now() > end) throw new Error(`condition not met: ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const job = (key: string, id: string) => t.rest('GET', `${A}/jobs/${id}`, { key });
  const JOB_QUERY = `query($id: ID!) { assetJob(id: $id) { jobId kind status statusUrl detailUrl type assetId
    bulk { total succeeded failed } ai { action result } migration { id status } workflowRun { id status } } }`;

  /** The job as /jobs/{id} and GraphQL answer it, and as its status_url answers. */
  const readEverywhere = async (key: string, submitted: { job_id: string; status_url: string }, kind: string) => {
    const id = submitted.job_id;
    expect(submitted.status_url).toMatch(new RegExp(`${A}/jobs/${id}$`));
    const rest = await job(key, id);
    expect(rest.status).toBe(200);
    expect(rest.body.data).toMatchObject({ job_id: id, kind, status: expect.any(String) });
    expect(rest.body.data.status_url).toBe(`${t.platform.config.baseUrl}${A}/jobs/${id}`);
    const viaStatusUrl = await t.rest('GET', local(submitted.status_url), { key });
    expect(viaStatusUrl.status).toBe(200);
    expect(viaStatusUrl.body.data.job_id).toBe(id);
    // The kind's own route (the alias) answers the same record.
    const detail = await t.rest('GET', local(rest.body.data.detail_url), { key });
    expect(detail.status).toBe(200);
    expect(detail.body.data.job_id ?? detail.body.data.id).toBe(id);
    const gql = await t.gql(JOB_QUERY, { id }, key);
    expect(gql.errors).toBeUndefined();
    expect(gql.data.assetJob).toMatchObject({ jobId: id, kind, statusUrl: rest.body.data.status_url });
    // Another account sees no such job.
    const stranger = await t.createKey();
    expect((await job(stranger.key, id)).status).toBe(404);
    return { rest: rest.body.data, gql: gql.data.assetJob };
  };

  it('delete, bulk and AI jobs (action, text extraction, generation) are read at /jobs/{id}; bulk and AI cannot be cancelled there', async () => {
    const { key } = await t.createKey();
    const a = await upload(key, await png(), 'red.png');
    const b = await upload(key, await png(), 'red2.png');

    // A delete job: cancelled while queued.
    const del = await t.rest('DELETE', `${A}/${a.id}`, { key, headers: { 'if-match': `"${a.revision}"` } });
    expect(del.status).toBe(202);
    const d = await readEverywhere(key, del.body.data, 'delete');
    expect(d.rest).toMatchObject({ type: 'delete', asset_id: a.id, status: 'queued' });
    expect(Object.keys(d.rest)).not.toEqual(expect.arrayContaining(['bulk']));
    const cancelled = await t.rest('POST', `${A}/jobs/${del.body.data.job_id}/cancel`, { key });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ kind: 'delete', status: 'cancelled' });

    // A bulk job.
    const bulk = await t.rest('POST', `${A}/bulk`, {
      key,
      body: { items: [{ asset_id: b.id, revision: b.revision, action: 'add_tags', tags: ['x'] }] },
    });
    expect(bulk.status).toBe(202);
    await until(
      () => job(key, bulk.body.data.job_id),
      (r) => r.body.data?.status === 'succeeded',
    );
    const bj = await readEverywhere(key, bulk.body.data, 'bulk');
    // REST: the kind's own fields at the top, as at its own route.
    expect(bj.rest).toMatchObject({ type: 'bulk', total: 1, succeeded: 1, failed: 0 });
    expect(bj.rest.detail_url).toMatch(new RegExp(`${A}/bulk/${bulk.body.data.job_id}$`));
    expect(bj.gql.bulk).toEqual({ total: 1, succeeded: 1, failed: 0 });
    const noCancel = await t.rest('POST', `${A}/jobs/${bulk.body.data.job_id}/cancel`, { key });
    expect(noCancel.status).toBe(409);
    expect(noCancel.body.error).toMatchObject({ code: 'assets.job_not_cancellable', details: { kind: 'bulk' } });

    // AI jobs: an action, a text extraction and a generation.
    const analyze = await t.rest('POST', `${A}/${b.id}/ai/analyze`, { key });
    expect(analyze.status).toBe(202);
    await until(
      () => job(key, analyze.body.data.job_id),
      (r) => ['succeeded', 'failed'].includes(r.body.data?.status),
    );
    const aj = await readEverywhere(key, analyze.body.data, 'ai');
    expect(aj.rest).toMatchObject({ type: 'analyze', action: 'analyze', asset_id: b.id, status: 'succeeded', error: null });
    expect(aj.rest.result).toMatchObject({ width: 64, height: 48 });
    expect(aj.gql.ai).toMatchObject({ action: 'analyze', result: { width: 64 } });
    const aiCancel = await t.rest('POST', `${A}/jobs/${analyze.body.data.job_id}/cancel`, { key });
    expect(aiCancel.status).toBe(409);
    expect(aiCancel.body.error.details).toMatchObject({ kind: 'ai', status: 'succeeded' });

    const ocr = await t.rest('POST', `${A}/${b.id}/text-extraction`, { key });
    expect(ocr.status).toBe(202);
    expect((await readEverywhere(key, ocr.body.data, 'ai')).rest.type).toBe('text-extraction');

    const gen = await t.rest('POST', `${A}/generations`, {
      key,
      body: { prompt: 'a red poster', width: 64, height: 64 },
      headers: { 'idempotency-key': uniqueName('gen') },
    });
    expect([gen.status, gen.body.error]).toEqual([202, undefined]);
    expect((await readEverywhere(key, gen.body.data, 'ai')).rest).toMatchObject({ type: 'generation', asset_id: null });

    expect((await job(key, '00000000-0000-4000-8000-000000000000')).body.error.code).toBe('assets.job_not_found');
  });

  it("a bulk job's status_url answers its per-item results as /bulk/{id} does: which item failed with 412 or 404, paged", async () => {
    const { key } = await t.createKey();
    const a = await upload(key, await png(), 'a.png');
    const b = await upload(key, await png(), 'b.png');
    const bulk = await t.rest('POST', `${A}/bulk`, {
      key,
      body: {
        items: [
          { asset_id: a.id, revision: a.revision, action: 'add_tags', tags: ['ok'] },
          { asset_id: b.id, revision: b.revision + 5, action: 'visibility', visibility: 'public' },
          { asset_id: 'no-such-asset', revision: 1, action: 'delete' },
        ],
      },
    });
    expect(bulk.status).toBe(202);
    const statusUrl = local(bulk.body.data.status_url);
    const polled = await until(
      () => t.rest('GET', statusUrl, { key }),
      (r) => r.body.data?.status === 'succeeded',
    );
    const own = await t.rest('GET', `${A}/bulk/${bulk.body.data.job_id}`, { key });
    expect(own.status).toBe(200);
    expect(polled.body.data).toMatchObject({ kind: 'bulk', total: 3, succeeded: 1, failed: 2, next_cursor: '' });
    // The same per-item results, field for field, as the bulk route answers them.
    expect(polled.body.data.results).toEqual(own.body.data.results);
    expect(polled.body.data.results.map((r: any) => [r.index, r.status, r.status_code, r.error_code])).toEqual([
      [0, 'succeeded', 200, null],
      [1, 'failed', 412, 'assets.revision_mismatch'],
      [2, 'failed', 404, expect.any(String)],
    ]);
    expect(polled.body.data.results[1]).toMatchObject({ asset_id: b.id, revision: b.revision, delete_job_id: null });

    // Paged with the bulk route's limit and cursor.
    const first = await t.rest('GET', `${statusUrl}?limit=2`, { key });
    expect(first.body.data.results.map((r: any) => r.index)).toEqual([0, 1]);
    const next = await t.rest('GET', `${statusUrl}?limit=2&cursor=${encodeURIComponent(first.body.data.next_cursor)}`, { key });
    expect(next.body.data.results.map((r: any) => r.index)).toEqual([2]);
    expect(next.body.data.next_cursor).toBe('');
    expect((await t.rest('GET', `${statusUrl}?limit=0`, { key })).status).toBe(400);

    // GraphQL: the same page on the job's `bulk` record.
    const gql = await t.gql(
      `query($id: ID!) { assetJob(id: $id) { bulk(limit: 1) { results { index statusCode errorCode } nextCursor } } }`,
      { id: bulk.body.data.job_id },
      key,
    );
    expect(gql.errors).toBeUndefined();
    expect(gql.data.assetJob.bulk.results).toEqual([{ index: 0, statusCode: 200, errorCode: null }]);
    expect(gql.data.assetJob.bulk.nextCursor).not.toBe('');
  });

  it('migration and workflow-run jobs are read and cancelled at /jobs/{id}, through REST and GraphQL', async () => {
    const { key } = await t.createKey();
    const conn = await t.rest('POST', `${A}/connections`, {
      key,
      body: {
        name: 'silent store',
        type: 's3',
        config: { endpoint: silentUrl, bucket: 'source', access_key_id: 'AK' },
        secrets: { secret_access_key: 'secret' },
      },
    });
    expect([conn.status, conn.body.error]).toEqual([201, undefined]);
    const mig = await t.rest('POST', `${A}/migrations`, { key, body: { connection: conn.body.data.id } });
    expect(mig.status).toBe(202);
    const m = await readEverywhere(key, mig.body.data, 'migration');
    expect(m.rest).toMatchObject({ type: 'migration', id: mig.body.data.id, counts: expect.any(Object) });
    expect(m.gql.migration).toMatchObject({ id: mig.body.data.id });
    const stop = await t.gql(
      `mutation($id: ID!) { cancelAssetJob(id: $id) { kind status migration { status } } }`,
      { id: mig.body.data.id },
      key,
    );
    expect(stop.errors).toBeUndefined();
    expect(stop.data.cancelAssetJob).toEqual({ kind: 'migration', status: 'cancelled', migration: { status: 'cancelled' } });
    expect((await t.rest('GET', `${A}/migrations/${mig.body.data.id}`, { key })).body.data.status).toBe('cancelled');

    // A workflow run waiting for an approval.
    const asset = await upload(key, await png(), 'w.png');
    const draft = {
      trigger: { type: 'manual' },
      steps: [{ id: 'review', type: 'wait_for_approval', config: { title: 'Check' } }],
    };
    const wf = await t.rest('POST', `${A}/workflows`, { key, body: { name: 'review', draft } });
    expect(wf.status).toBe(201);
    expect((await t.rest('POST', `${A}/workflows/${wf.body.data.id}/publish`, { key })).status).toBe(201);
    expect((await t.rest('POST', `${A}/workflows/${wf.body.data.id}/activate`, { key })).status).toBe(200);
    const run = await t.rest('POST', `${A}/workflows/${wf.body.data.id}/run`, { key, body: { asset_id: asset.id } });
    expect(run.status).toBe(202);
    await until(
      () => job(key, run.body.data.job_id),
      (r) => r.body.data?.status === 'waiting_approval',
    );
    const r = await readEverywhere(
      key,
      { ...run.body.data, status_url: `${t.bridgeUrl}${run.body.data.status_url}` },
      'workflow_run',
    );
    expect(r.rest).toMatchObject({ type: 'workflow_run', asset_id: asset.id, id: run.body.data.id, current_step: 'review' });
    expect(r.gql.workflowRun).toEqual({ id: run.body.data.id, status: 'waiting_approval' });
    const stopRun = await t.rest('POST', `${A}/jobs/${run.body.data.job_id}/cancel`, { key });
    expect(stopRun.status).toBe(200);
    expect(stopRun.body.data).toMatchObject({ kind: 'workflow_run', status: 'cancelled', id: run.body.data.id });
    // A read-only key cannot cancel any kind.
    const reader = await t.createKey({ role: 'read_only' });
    expect((await t.rest('POST', `${A}/jobs/${run.body.data.job_id}/cancel`, { key: reader.key })).status).toBe(403);
  });
});
