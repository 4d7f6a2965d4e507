import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { AiJobs } from '../../subgraphs/assets/ai/jobs';
import { EICAR } from '../../subgraphs/assets/scanning/scanner';
import type { AssetsService } from '../../subgraphs/assets/storage/service';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const A = '/api/v1/assets';
const CREDITS = '/api/v1/billing/ai-credits';

/** AI actions, OCR, transcripts and generations, through the real bridge, router, engine and ledger. */
describe('assets AI, OCR, transcripts, generations', () => {
  let t: TestPlatform;
  let blobDir: string;
  let svc: AssetsService;
  let aiJobs: AiJobs;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-ai-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir });
    svc = (t.platform.services as any).assets.assets as AssetsService;
    aiJobs = (t.platform.services as any).assets.aiJobs as AiJobs;
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const solid = (w: number, h: number, r: number, g: number, b: number) =>
    sharp({ create: { width: w, height: h, channels: 3, background: { r, g, b } } })
      .png()
      .toBuffer();
  const upload = async (key: string, body: Buffer | string, name: string) => {
    const fd = new FormData();
    fd.append('file', new Blob([body]), name);
    const res = await fetch(`${t.bridgeUrl}${A}/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const json = (await res.json()) as any;
    expect(res.status).toBe(201);
    return json.data.id as string;
  };
  const poll = async (key: string, url: string) => {
    const p = url.replace(/^https?:\/\/[^/]+/, '');
    for (let i = 0; i < 300; i++) {
      const r = await t.rest('GET', p, { key });
      if (r.body.data && ['succeeded', 'failed'].includes(r.body.data.status)) return r.body.data;
      await new Promise((res) => setTimeout(res, 200));
    }
    throw new Error(`job at ${url} did not finish`);
  };
  const rgb = (hex: string) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

  it('config: defaults, If-Match (428/412), validation, admin scope, ETag', async () => {
    const { key, account } = await t.createKey();
    const got = await t.rest('GET', `${A}/ai/config`, { key });
    expect(got.status).toBe(200);
    expect(got.headers.get('etag')).toBe('"0"');
    expect(got.body.data).toMatchObject({
      enabled_actions: [
        'analyze',
        'moderation',
        'smart-crop',
        'background-remove',
        'text-extraction',
        'transcript',
        'generation',
      ],
      monthly_spend_cap_micros: 5_000_000,
      model: 'local-v1',
      revision: 0,
      spent_micros: 0,
      evaluation: { model: 'local-v1', passed: true },
    });
    expect(got.body.data.evaluation.cases.length).toBeGreaterThanOrEqual(5);
    const body = { enabled_actions: ['analyze'], monthly_spend_cap_micros: 100_000 };
    expect((await t.rest('PUT', `${A}/ai/config`, { key, body })).status).toBe(428);
    const stale = await t.rest('PUT', `${A}/ai/config`, { key, body, headers: { 'if-match': '"7"' } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('assets.revision_mismatch');
    const bad = await t.rest('PUT', `${A}/ai/config`, {
      key,
      body: { ...body, enabled_actions: ['mind-reading'] },
      headers: { 'if-match': '"0"' },
    });
    expect(bad.status).toBe(400);
    const reader = await t.createKey({ account, scopes: ['assets:read'] });
    expect((await t.rest('PUT', `${A}/ai/config`, { key: reader.key, body, headers: { 'if-match': '"0"' } })).status).toBe(403);
    const put = await t.rest('PUT', `${A}/ai/config`, { key, body, headers: { 'if-match': '"0"' } });
    expect(put.status).toBe(200);
    expect(put.headers.get('etag')).toBe('"1"');
    expect(put.body.data).toMatchObject({ enabled_actions: ['analyze'], monthly_spend_cap_micros: 100_000, revision: 1 });
    expect((await t.rest('PUT', `${A}/ai/config`, { key, body, headers: { 'if-match': '"0"' } })).status).toBe(412);
  });

  it('analyze: a red image’s dimensions and dominant colour; the ledger is debited once, even when the job runs again', async () => {
    const { key } = await t.createKey();
    const id = await upload(key, await solid(320, 240, 230, 10, 10), 'red.png');
    const before = (await t.rest('GET', CREDITS, { key })).body.data;
    const res = await t.rest('POST', `${A}/${id}/ai/analyze`, { key });
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ status: 'queued', action: 'analyze', asset_id: id, price_micros: 20_000 });
    const job = await poll(key, res.body.data.status_url);
    expect(job.status).toBe('succeeded');
    expect(job.result).toMatchObject({ provider: 'local', width: 320, height: 240, format: 'png' });
    const [r, g, b] = rgb(job.result.dominant_colour);
    expect(r).toBeGreaterThan(200);
    expect(g).toBeLessThan(40);
    expect(b).toBeLessThan(40);
    expect(job.result.dominant_colours[0].ratio).toBeGreaterThan(0.9);
    const data = await t.rest('GET', `${A}/${id}/ai`, { key });
    expect(data.status).toBe(200);
    expect(data.body.data.results.analyze.job_id).toBe(job.job_id);

    const after = (await t.rest('GET', CREDITS, { key })).body.data;
    expect(after.used_this_period - before.used_this_period).toBe(2);
    // A crash after the debit, before the job was marked done: the executor runs again from the
    // start (every step re-run) and must find the same ledger entry, not draw a second time.
    await aiJobs.m.Job.updateOne({ _id: job.job_id }, { $set: { status: 'running' } });
    const ctx = {
      op: { input: { jobId: job.job_id, attempt: 1 } },
      step: (_id: string, fn: () => Promise<unknown>) => fn(),
    } as any;
    expect(await aiJobs.run(ctx)).toEqual({ status: 'succeeded' });
    const again = (await t.rest('GET', CREDITS, { key })).body.data;
    expect(again.used_this_period).toBe(after.used_this_period);
    const usage = await t.rest('GET', `${CREDITS}/usage?source=assets.ai.analyze`, { key });
    expect(usage.body.data.items).toHaveLength(1);
    const cfg = await t.rest('GET', `${A}/ai/config`, { key });
    expect(cfg.body.data.spent_micros).toBe(20_000);
    // Analytics count the charged action once, though the job ran twice.
    const today = new Date().toISOString().slice(0, 10);
    const analytics = await t.rest('GET', `${A}/analytics?from=${today}&to=${today}`, { key });
    expect(analytics.status).toBe(200);
    expect(analytics.body.data.totals.ai).toEqual({ actions: 1, spend_micros: 20_000 });
    expect(analytics.body.data.days[0].ai).toEqual({ actions: 1, spend_micros: 20_000 });
  });

  it('smart-crop, background-remove and moderation compute from the pixels; outputs are private assets', async () => {
    const { key } = await t.createKey();
    const img = await sharp(await solid(400, 200, 255, 255, 255))
      .composite([{ input: await solid(100, 100, 0, 0, 0), left: 280, top: 50 }])
      .png()
      .toBuffer();
    const id = await upload(key, img, 'square.png');
    const crop = await t.rest('POST', `${A}/${id}/ai/smart-crop`, { key, body: { width: 100, height: 100 } });
    expect(crop.status).toBe(202);
    const cropJob = await poll(key, crop.body.data.status_url);
    expect(cropJob.status).toBe('succeeded');
    expect(cropJob.result).toMatchObject({
      strategy: 'attention',
      source: { width: 400, height: 200 },
      output: { width: 100, height: 100 },
    });
    expect(cropJob.result.crop.width).toBe(200);
    expect(cropJob.result.crop.x).toBeGreaterThanOrEqual(150);
    expect(cropJob.output_asset_ids).toHaveLength(1);
    const out = await t.rest('GET', `${A}/${cropJob.output_asset_ids[0]}`, { key });
    expect(out.body.data).toMatchObject({ visibility: 'private', mime_type: 'image/png', status: 'ready' });

    const bg = await poll(key, (await t.rest('POST', `${A}/${id}/ai/background-remove`, { key })).body.data.status_url);
    expect(bg.status).toBe('succeeded');
    expect(bg.result.background_colour).toBe('#ffffff');
    expect(bg.result.foreground_ratio).toBeCloseTo(0.125, 2);
    expect(bg.output_asset_ids).toHaveLength(1);

    const mod = await poll(key, (await t.rest('POST', `${A}/${id}/ai/moderation`, { key })).body.data.status_url);
    expect(mod.result).toMatchObject({ provider: 'local', verdict: 'approved' });
    expect(mod.result.rule).toContain('YCbCr');
    expect((await t.rest('GET', `${A}/${id}`, { key })).body.data.moderation_status).toBe('approved');
    const data = (await t.rest('GET', `${A}/${id}/ai`, { key })).body.data;
    expect(Object.keys(data.results).sort()).toEqual(['background-remove', 'moderation', 'smart-crop']);
    expect(data.moderation_status).toBe('approved');
    // smart-crop needs its body (validation: 400).
    expect((await t.rest('POST', `${A}/${id}/ai/smart-crop`, { key, body: { width: 0, height: 5 } })).status).toBe(400);
  });

  it('refusals: not enabled (409), spend cap (402), evaluation gate (409), quarantined/failed (409), scope (403)', async () => {
    const { key, account } = await t.createKey();
    const id = await upload(key, await solid(64, 64, 0, 0, 255), 'blue.png');
    let rev = 0;
    const put = async (body: object) => {
      const r = await t.rest('PUT', `${A}/ai/config`, { key, body, headers: { 'if-match': `"${rev}"` } });
      expect(r.status).toBe(200);
      rev = r.body.data.revision;
    };
    await put({ enabled_actions: ['moderation'], monthly_spend_cap_micros: 1_000_000 });
    const off = await t.rest('POST', `${A}/${id}/ai/analyze`, { key });
    expect(off.status).toBe(409);
    expect(off.body.error.code).toBe('assets.ai_action_not_enabled');

    await put({ enabled_actions: ['analyze', 'moderation'], monthly_spend_cap_micros: 30_000 });
    expect((await t.rest('POST', `${A}/${id}/ai/analyze`, { key })).status).toBe(202); // 20,000 of 30,000
    const capped = await t.rest('POST', `${A}/${id}/ai/analyze`, { key });
    expect(capped.status).toBe(402);
    expect(capped.body.error.code).toBe('assets.ai_spend_cap_reached');
    expect(capped.body.error.details).toMatchObject({
      monthly_spend_cap_micros: 30_000,
      spent_micros: 20_000,
      price_micros: 20_000,
    });
    expect((await t.rest('POST', `${A}/${id}/ai/moderation`, { key })).status).toBe(202); // 10,000 still fits

    await put({ enabled_actions: ['analyze'], monthly_spend_cap_micros: 1_000_000, model: 'external-preview' });
    const cfg = await t.rest('GET', `${A}/ai/config`, { key });
    expect(cfg.body.data.evaluation).toMatchObject({ model: 'external-preview', passed: false });
    const gate = await t.rest('POST', `${A}/${id}/ai/analyze`, { key });
    expect(gate.status).toBe(409);
    expect(gate.body.error.code).toBe('assets.ai_model_not_evaluated');
    await put({ enabled_actions: ['analyze', 'text-extraction'], monthly_spend_cap_micros: 1_000_000, model: 'local-v1' });

    const bad = await upload(key, EICAR, 'eicar.txt');
    expect((await t.rest('GET', `${A}/${bad}`, { key })).body.data.status).toBe('quarantined');
    for (const path of [`${A}/${bad}/ai/analyze`, `${A}/${bad}/text-extraction`]) {
      const r = await t.rest('POST', path, { key });
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('assets.not_processable');
    }
    const failed = await upload(key, await solid(32, 32, 9, 9, 9), 'failed.png');
    await svc.m.Asset.updateOne({ _id: failed }, { $set: { status: 'failed' } });
    const f = await t.rest('POST', `${A}/${failed}/ai/analyze`, { key });
    expect(f.status).toBe(409);
    expect(f.body.error.details.status).toBe('failed');
    expect((await t.rest('POST', `${A}/00000000-0000-4000-8000-000000000000/ai/analyze`, { key })).status).toBe(404);

    const reader = await t.createKey({ account, scopes: ['assets:read'] });
    expect((await t.rest('POST', `${A}/${id}/ai/analyze`, { key: reader.key })).status).toBe(403);
    expect((await t.rest('GET', `${A}/${id}/ai`, { key: reader.key })).status).toBe(200);
  });

  it('OCR reads "HELLO 42" from an image rendered by sharp; a failed extraction is retried as attempt 2', async () => {
    const { key } = await t.createKey();
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="200"><rect width="100%" height="100%" fill="white"/><text x="40" y="130" font-family="DejaVu Sans, sans-serif" font-size="96" fill="black">HELLO 42</text></svg>`;
    const id = await upload(key, await sharp(Buffer.from(svg)).png().toBuffer(), 'hello.png');
    expect((await t.rest('GET', `${A}/${id}/text-extraction`, { key })).status).toBe(404);
    const req = await t.rest('POST', `${A}/${id}/text-extraction`, { key });
    expect(req.status).toBe(202);
    expect(req.body.data).toMatchObject({ status: 'queued', asset_id: id, attempt: 1 });
    await poll(key, req.body.data.status_url);
    const got = await t.rest('GET', `${A}/${id}/text-extraction`, { key });
    expect(got.body.data).toMatchObject({ status: 'succeeded', extraction_id: req.body.data.extraction_id, language: 'eng' });
    expect(got.body.data.text).toContain('HELLO 42');
    expect(got.body.data.engine).toContain('tesseract');
    const notFailed = await t.rest('POST', `${A}/text-extractions/${req.body.data.extraction_id}/retry`, { key });
    expect(notFailed.status).toBe(409);
    expect(notFailed.body.error.code).toBe('assets.job_not_retryable');

    // The bytes cannot be found while the job runs: it fails (and gives its price back); once they
    // are there again a retry succeeds as attempt 2.
    const asset = await svc.m.Asset.findById(id).lean<any>();
    const sha = asset.versions[0].sha256;
    await svc.m.Asset.updateOne({ _id: id }, { $set: { 'versions.0.sha256': 'f'.repeat(64) } });
    const second = await t.rest('POST', `${A}/${id}/text-extraction`, { key });
    const failed = await poll(key, second.body.data.status_url);
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'assets.source_unavailable' } });
    await svc.m.Asset.updateOne({ _id: id }, { $set: { 'versions.0.sha256': sha } });
    const retry = await t.rest('POST', `${A}/text-extractions/${second.body.data.extraction_id}/retry`, { key });
    expect(retry.status).toBe(202);
    expect(retry.body.data).toMatchObject({ attempt: 2, status: 'queued' });
    await poll(key, retry.body.data.status_url);
    const latest = await t.rest('GET', `${A}/${id}/text-extraction`, { key });
    expect(latest.body.data).toMatchObject({ extraction_id: second.body.data.extraction_id, status: 'succeeded', attempt: 2 });
    expect(latest.body.data.text).toContain('HELLO 42');
    // Two successful extractions are charged (2 credits each); the failed attempt is not.
    const usage = await t.rest('GET', `${CREDITS}/usage?source=assets.ai.text-extraction`, { key });
    expect(usage.body.data.items).toHaveLength(2);
    expect((await t.rest('GET', `${A}/ai/config`, { key })).body.data.spent_micros).toBe(40_000);
  });

  it('transcript: the local provider answers 422 assets.transcription_unavailable; nothing is stored', async () => {
    const { key } = await t.createKey();
    // A tiny PCM WAV (RIFF header and 800 silent samples).
    const samples = 800;
    const wav = Buffer.alloc(44 + samples * 2);
    wav.write('RIFF', 0);
    wav.writeUInt32LE(36 + samples * 2, 4);
    wav.write('WAVEfmt ', 8);
    wav.writeUInt32LE(16, 16);
    wav.writeUInt16LE(1, 20);
    wav.writeUInt16LE(1, 22);
    wav.writeUInt32LE(8000, 24);
    wav.writeUInt32LE(16000, 28);
    wav.writeUInt16LE(2, 32);
    wav.writeUInt16LE(16, 34);
    wav.write('data', 36);
    wav.writeUInt32LE(samples * 2, 40);
    const id = await upload(key, wav, 'note.wav');
    const asset = (await t.rest('GET', `${A}/${id}`, { key })).body.data;
    expect(asset.type).toBe('audio');
    const r = await t.rest('POST', `${A}/${id}/transcript`, { key });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'assets.transcription_unavailable', details: { provider: 'local' } });
    const g = await t.rest('GET', `${A}/${id}/transcript`, { key });
    expect(g.status).toBe(404);
    expect(g.body.error.code).toBe('assets.transcript_not_found');
    const img = await upload(key, await solid(8, 8, 1, 2, 3), 'x.png');
    const notAv = await t.rest('POST', `${A}/${img}/transcript`, { key });
    expect(notAv.status).toBe(409);
    expect(notAv.body.error.code).toBe('assets.not_transcribable');
    expect((await t.rest('GET', `${A}/ai/config`, { key })).body.data.spent_micros).toBe(0);
  });

  it('generations: assets:generate, Idempotency-Key (428, replay, 409 conflict), private red images', async () => {
    const { key, account } = await t.createKey();
    const body = { prompt: 'a red poster', width: 128, height: 96, count: 2 };
    const writer = await t.createKey({ account, scopes: ['assets:read', 'assets:write', 'assets:process'] });
    expect(
      (await t.rest('POST', `${A}/generations`, { key: writer.key, body, headers: { 'idempotency-key': 'g1' } })).status,
    ).toBe(403);
    const noKey = await t.rest('POST', `${A}/generations`, { key, body });
    expect(noKey.status).toBe(428);
    expect(noKey.body.error.code).toBe('assets.idempotency_key_required');
    const first = await t.rest('POST', `${A}/generations`, { key, body, headers: { 'idempotency-key': 'g1' } });
    expect(first.status).toBe(202);
    expect(first.body.data).toMatchObject({ action: 'generation', price_micros: 80_000, asset_id: null });
    const replay = await t.rest('POST', `${A}/generations`, { key, body, headers: { 'idempotency-key': 'g1' } });
    expect(replay.status).toBe(202);
    expect(replay.body.data.job_id).toBe(first.body.data.job_id);
    const other = await t.rest('POST', `${A}/generations`, {
      key,
      body: { ...body, prompt: 'blue' },
      headers: { 'idempotency-key': 'g1' },
    });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('assets.idempotency_conflict');

    const nowhere = await t.rest('POST', `${A}/generations`, {
      key,
      body: { ...body, bucket: 'no-such-bucket' },
      headers: { 'idempotency-key': 'g2' },
    });
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.error.code).toBe('assets.bucket_not_found');

    const job = await poll(key, first.body.data.status_url);
    expect(job.status).toBe('succeeded');
    expect(job.result.provider).toBe('local');
    expect(job.output_asset_ids).toHaveLength(2);
    const made = (await t.rest('GET', `${A}/${job.output_asset_ids[0]}`, { key })).body.data;
    expect(made).toMatchObject({ visibility: 'private', mime_type: 'image/png', type: 'image' });
    expect(made.tags).toEqual(expect.arrayContaining(['ai-output', 'local-provider']));
    const analysed = await poll(key, (await t.rest('POST', `${A}/${made.id}/ai/analyze`, { key })).body.data.status_url);
    expect(analysed.result).toMatchObject({ width: 128, height: 96 });
    const [r, g, b] = rgb(analysed.result.dominant_colour);
    expect(r).toBeGreaterThan(150);
    expect(g).toBeLessThan(60);
    expect(b).toBeLessThan(60);
    // Charged once for two images (4 credits each), whatever the replays.
    const usage = await t.rest('GET', `${CREDITS}/usage?source=assets.ai.generation`, { key });
    expect(usage.body.data.items).toHaveLength(1);
    expect(usage.body.data.items[0].credits).toBe(8);
  });
});
