import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { LifecycleRules } from '../../subgraphs/assets/lifecycle/rules';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const DAY = 24 * 3600 * 1000;

/** Lifecycle rules on a test clock and the usage views, through the real bridge, CDN, Kafka and store. */
describe('assets lifecycle rules and views', () => {
  let t: TestPlatform;
  let blobDir: string;
  let cdnUrl: string;
  let rules: LifecycleRules;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-lc-'));
    t = await startTestPlatform({
      ASSETS_BLOB_DIR: blobDir,
      ASSETS_LIFECYCLE_INTERVAL_MS: '150',
      ASSETS_DELETE_DELAY_MS: '0',
    });
    cdnUrl = t.platform.cdnUrl!;
    rules = (t.platform.services as any).assets.lifecycle as LifecycleRules;
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, k: string, body: Buffer | string, fields: Record<string, string> = {}, name = 'f.txt') => {
    const fd = new FormData();
    fd.append('key', k);
    for (const [f, v] of Object.entries(fields)) fd.append(f, v);
    fd.append('file', new Blob([body]), name);
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const json = (await res.json()) as any;
    expect(res.status).toBe(201);
    return json.data;
  };
  const replace = async (key: string, id: string, revision: number, body: string) => {
    const fd = new FormData();
    fd.append('file', new Blob([body]), 'f.txt');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/${id}/replace`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'If-Match': `"${revision}"` },
      body: fd,
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as any).data;
  };
  const until = async <T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await what();
      if (ok(v) || Date.now() > end) return v;
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const passes = async (key: string, n = 2) => {
    // Waits for the worker to have run every enabled rule of the account `n` more times.
    const runs = async (): Promise<(string | null)[]> =>
      (await t.rest('GET', '/api/v1/assets/lifecycle-rules', { key })).body.data
        .filter((r: any) => r.enabled)
        .map((r: any) => r.last_run_at as string | null);
    for (let i = 0; i < n; i++) {
      const before = await runs();
      const after = await until(runs, (now) => now.every((v: string | null, j: number) => v !== null && v !== before[j]));
      expect(after.every((v: string | null, j: number) => v !== null && v !== before[j])).toBe(true);
    }
  };

  it('creates, lists and deletes rules; refuses duplicates, bad bodies and unknown ids', async () => {
    const { key } = await t.createKey();
    const made = await t.rest('POST', '/api/v1/assets/lifecycle-rules', {
      key,
      body: { name: 'old-logs', prefix: 'logs/', action: 'delete', age_days: 30 },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({
      success: true,
      data: { name: 'old-logs', prefix: 'logs/', action: 'delete', age_days: 30, enabled: true, last_run_at: null },
    });
    expect(typeof made.body.data.id).toBe('string');
    const dup = await t.rest('POST', '/api/v1/assets/lifecycle-rules', {
      key,
      body: { name: 'old-logs', action: 'expire_versions', age_days: 1 },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('assets.lifecycle_rule_exists');
    for (const bad of [
      { name: 'x', action: 'archive', age_days: 3 },
      { name: 'x', action: 'delete', age_days: 0 },
      { name: 'x', action: 'delete', age_days: 3, extra: 1 },
      { action: 'delete', age_days: 3 },
    ])
      expect((await t.rest('POST', '/api/v1/assets/lifecycle-rules', { key, body: bad })).status).toBe(400);
    const list = await t.rest('GET', '/api/v1/assets/lifecycle-rules', { key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((r: any) => r.name)).toEqual(['old-logs']);
    // Another account sees none of them and cannot delete them.
    const other = await t.createKey();
    expect((await t.rest('GET', '/api/v1/assets/lifecycle-rules', { key: other.key })).body.data).toEqual([]);
    expect((await t.rest('DELETE', `/api/v1/assets/lifecycle-rules/${made.body.data.id}`, { key: other.key })).status).toBe(404);
    const del = await t.rest('DELETE', `/api/v1/assets/lifecycle-rules/${made.body.data.id}`, { key });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: made.body.data.id, deleted: true });
    expect((await t.rest('DELETE', `/api/v1/assets/lifecycle-rules/${made.body.data.id}`, { key })).status).toBe(404);
    expect((await t.rest('GET', '/api/v1/assets/lifecycle-rules')).status).toBe(401);
  });

  it('deletes assets past the age under the prefix on the test clock; a disabled rule does nothing', async () => {
    rules.clock.offsetMs = 0;
    const { key } = await t.createKey();
    const a = await upload(key, 'logs/a.txt', 'old log a', { visibility: 'public' });
    const b = await upload(key, 'logs/b.txt', 'old log b');
    const keep = await upload(key, 'keep/c.txt', 'kept');
    const other = await upload(key, 'logsbook/d.txt', 'not under logs/');
    await t.rest('POST', '/api/v1/assets/lifecycle-rules', {
      key,
      body: { name: 'logs', prefix: 'logs/', action: 'delete', age_days: 30 },
    });
    await t.rest('POST', '/api/v1/assets/lifecycle-rules', {
      key,
      body: { name: 'keep-off', prefix: 'keep/', action: 'delete', age_days: 1, enabled: false },
    });
    // Young assets survive passes of the worker.
    await passes(key);
    for (const x of [a, b, keep, other]) expect((await t.rest('GET', `/api/v1/assets/${x.id}`, { key })).status).toBe(200);

    rules.clock.advance(31 * DAY);
    const gone = await until(
      async () => (await t.rest('GET', '/api/v1/assets?prefix=logs/', { key })).body.data.total,
      (n: number) => n === 0,
    );
    expect(gone).toBe(0);
    expect((await t.rest('GET', `/api/v1/assets/${a.id}`, { key })).status).toBe(404);
    expect((await fetch(`${cdnUrl}/assets/${a.id}/versions/1/f.txt`)).status).toBe(404);
    // The disabled rule (age 1 day) and an asset outside the literal prefix are untouched.
    await passes(key);
    expect((await t.rest('GET', `/api/v1/assets/${keep.id}`, { key })).status).toBe(200);
    expect((await t.rest('GET', `/api/v1/assets/${other.id}`, { key })).status).toBe(200);
    const listed = (await t.rest('GET', '/api/v1/assets/lifecycle-rules', { key })).body.data;
    expect(listed.find((r: any) => r.name === 'logs').deleted_assets).toBe(2);
    expect(listed.find((r: any) => r.name === 'keep-off')).toMatchObject({
      enabled: false,
      last_run_at: null,
      deleted_assets: 0,
    });
    // The deletions went through the normal delete path: they are in the audit stream.
    const events = await until(
      async () => (await t.rest('GET', '/api/v1/assets/events?limit=100', { key })).body.data.events,
      (ev: any[]) => ev.filter((e) => e.type === 'asset.deleted').length === 2,
    );
    expect(
      events
        .filter((e: any) => e.type === 'asset.deleted')
        .map((e: any) => e.asset_id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
  });

  it('expire_versions removes old non-current versions and keeps the current one', async () => {
    rules.clock.offsetMs = 0;
    const { key } = await t.createKey();
    const v1 = await upload(key, 'docs/x.txt', 'version one');
    const v2 = await replace(key, v1.id, v1.revision, 'version two!');
    const v3 = await replace(key, v1.id, v2.revision, 'version three');
    expect(v3.current_version).toBe(3);
    const before = (await t.rest('GET', '/api/v1/assets/summary', { key })).body.data.totals.stored_bytes;
    expect(before).toBe(11 + 12 + 13);
    await t.rest('POST', '/api/v1/assets/lifecycle-rules', {
      key,
      body: { name: 'versions', prefix: 'docs/', action: 'expire_versions', age_days: 10 },
    });
    await passes(key);
    expect((await t.rest('GET', `/api/v1/assets/${v1.id}/versions`, { key })).body.data.versions).toHaveLength(3);

    rules.clock.advance(11 * DAY);
    const versions = await until(
      async () => (await t.rest('GET', `/api/v1/assets/${v1.id}/versions`, { key })).body.data.versions,
      (v: any[]) => v.length === 1,
    );
    expect(versions.map((v: any) => ({ number: v.number, current: v.current }))).toEqual([{ number: 3, current: true }]);
    const asset = (await t.rest('GET', `/api/v1/assets/${v1.id}`, { key })).body.data;
    expect(asset).toMatchObject({ current_version: 3, size: 13, status: 'ready', revision: v3.revision + 1 });
    expect((await t.rest('GET', '/api/v1/assets/summary', { key })).body.data.totals.stored_bytes).toBe(13);
    const rule = (await t.rest('GET', '/api/v1/assets/lifecycle-rules', { key })).body.data[0];
    expect(rule.expired_versions).toBe(2);
  });

  it('analytics counts deliveries and computed transforms; summary groups and finds duplicates', async () => {
    const { key } = await t.createKey();
    const text = 'the same bytes twice';
    const a = await upload(key, 'a.txt', text, { visibility: 'public' });
    const a2 = await upload(key, 'copy/a.txt', text);
    await upload(key, 'b.txt', 'other bytes');
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366cc' } })
      .png()
      .toBuffer();
    const img = await upload(key, 'img.png', png, { visibility: 'public' }, 'img.png');

    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${cdnUrl}/assets/${a.id}/versions/1/f.txt`);
      expect(await res.text()).toBe(text);
    }
    const tr = await t.rest('POST', `/api/v1/assets/${img.id}/transforms`, {
      key,
      body: { definition: { operations: [{ type: 'resize', width: 32 }], format: 'webp', quality: 60 } },
    });
    expect(tr.status).toBe(201);

    const today = new Date().toISOString().slice(0, 10);
    const want = { requests: 2, bytes: 2 * Buffer.byteLength(text) };
    const got = await until(
      async () => (await t.rest('GET', `/api/v1/assets/analytics?from=${today}&to=${today}`, { key })).body,
      (b: any) => b.data?.totals.delivery.requests >= want.requests,
    );
    expect(got.success).toBe(true);
    expect(got.data).toMatchObject({
      from: today,
      to: today,
      totals: {
        delivery: want,
        transforms: { computed: 1, deliveries: 0, bytes: tr.body.data.size },
        ai: { actions: 0, spend_micros: 0 },
      },
    });
    expect(got.data.days).toEqual([{ date: today, ...got.data.totals }]);
    const window = (await t.rest('GET', '/api/v1/assets/analytics', { key })).body.data;
    expect(window.days).toHaveLength(30);
    expect(window.to).toBe(today);
    expect((await t.rest('GET', `/api/v1/assets/analytics?from=${today}&to=2020-01-01`, { key })).status).toBe(422);
    expect((await t.rest('GET', '/api/v1/assets/analytics?from=2026-02-30', { key })).status).toBe(422);
    expect((await t.rest('GET', '/api/v1/assets/analytics?to=2026-02-31', { key })).status).toBe(422);
    expect((await t.rest('GET', '/api/v1/assets/analytics?to=0000-00-00', { key })).status).toBe(400);
    expect((await t.rest('GET', '/api/v1/assets/analytics?from=yesterday', { key })).status).toBe(400);
    // Another account's figures are its own.
    const other = await t.createKey();
    expect((await t.rest('GET', '/api/v1/assets/analytics', { key: other.key })).body.data.totals.delivery.requests).toBe(0);

    const summary = await t.rest('GET', '/api/v1/assets/summary', { key });
    expect(summary.status).toBe(200);
    const s = summary.body.data;
    expect(s.totals).toMatchObject({ assets: 4, bytes: 2 * text.length + 11 + png.length });
    expect(s.by_type).toEqual(
      expect.arrayContaining([{ key: 'image', assets: 1, bytes: png.length }, expect.objectContaining({ assets: 3 })]),
    );
    expect(s.by_visibility).toEqual([
      { key: 'private', assets: 2, bytes: text.length + 11 },
      { key: 'public', assets: 2, bytes: text.length + png.length },
    ]);
    expect(s.duplicate_groups).toEqual([
      {
        checksum: createHash('sha256').update(text).digest('hex'),
        assets: 2,
        bytes: 2 * text.length,
        wasted_bytes: text.length,
        asset_ids: [a.id, a2.id],
      },
    ]);
    expect((await t.rest('GET', '/api/v1/assets/summary', { key: other.key })).body.data).toMatchObject({
      totals: { assets: 0, bytes: 0 },
      duplicate_groups: [],
    });
  });

  it('the events stream records every change and pages with a cursor', async () => {
    const { key } = await t.createKey();
    const a = await upload(key, 'e.txt', 'events');
    let revision = a.revision;
    for (let i = 0; i < 4; i++) {
      const r = await t.rest('PUT', `/api/v1/assets/${a.id}/tags`, {
        key,
        body: { tags: [`t${i}`] },
        headers: { 'If-Match': `"${revision}"` },
      });
      expect(r.status).toBe(200);
      revision = r.body.data.revision;
    }
    // asset.created + asset.processed + 4 × asset.updated
    const all = await until(
      async () => (await t.rest('GET', '/api/v1/assets/events?limit=100', { key })).body.data.events,
      (ev: any[]) => ev.length >= 6,
    );
    expect(all).toHaveLength(6);
    expect(all.filter((e: any) => e.type === 'asset.updated')).toHaveLength(4);
    expect(all.map((e: any) => e.type)).toEqual(expect.arrayContaining(['asset.created', 'asset.processed']));
    expect(all.every((e: any) => e.asset_id === a.id && typeof e.occurred_at === 'string')).toBe(true);

    for (const direction of ['desc', 'asc']) {
      const seen: string[] = [];
      let cursor = '';
      let pages = 0;
      do {
        const page = await t.rest(
          'GET',
          `/api/v1/assets/events?limit=4&direction=${direction}${cursor ? `&cursor=${cursor}` : ''}`,
          {
            key,
          },
        );
        expect(page.status).toBe(200);
        seen.push(...page.body.data.events.map((e: any) => e.id));
        cursor = page.body.data.next_cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(2);
      expect(new Set(seen).size).toBe(6);
      expect(seen).toEqual(direction === 'desc' ? all.map((e: any) => e.id) : [...all.map((e: any) => e.id)].reverse());
    }
    // A cursor is bound to its direction (422, as a cursor that is not one); another account sees nothing.
    const first = await t.rest('GET', '/api/v1/assets/events?limit=2', { key });
    expect(
      (await t.rest('GET', `/api/v1/assets/events?limit=2&direction=asc&cursor=${first.body.data.next_cursor}`, { key })).status,
    ).toBe(422);
    expect((await t.rest('GET', '/api/v1/assets/events?cursor=not-a-cursor', { key })).status).toBe(422);
    const other = await t.createKey();
    expect((await t.rest('GET', '/api/v1/assets/events', { key: other.key })).body.data).toEqual({ events: [], next_cursor: '' });
    expect((await t.rest('GET', `/api/v1/assets/events?asset_id=${a.id}&limit=100`, { key })).body.data.events).toHaveLength(6);
  });
});
