import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { EICAR } from '../../subgraphs/assets/scanning/scanner';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Collections, saved searches, bulk jobs and webhooks through the real bridge (decision 0025). */
describe('assets organisation through the bridge', () => {
  let t: TestPlatform;
  let blobDir: string;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-org-'));
    t = await startTestPlatform({
      ASSETS_BLOB_DIR: blobDir,
      ASSETS_DELETE_DELAY_MS: '100',
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
      ASSETS_WEBHOOK_RETRY_BASE_MS: '150',
      ASSETS_WEBHOOK_RETRY_MAX_MS: '300',
      ASSETS_WEBHOOK_MAX_ATTEMPTS: '3',
      ASSETS_WEBHOOK_POLL_MS: '100',
    });
  }, 120_000);
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, k: string, body = 'hello', fields: Record<string, string> = {}) => {
    const fd = new FormData();
    fd.append('key', k);
    for (const [f, v] of Object.entries(fields)) fd.append(f, v);
    fd.append('file', new Blob([body]), 'f.txt');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(JSON.stringify(json));
    return json.data as { id: string; revision: number };
  };
  const until = async <T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> => {
    const end = Date.now() + ms;
    for (;;) {
      const v = await fn();
      if (ok(v) || Date.now() > end) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('collections: create, list, get with ETag, revision-guarded PUT and DELETE, and every error status', async () => {
    const { key } = await t.createKey();
    const a = await upload(key, 'c/a.txt');
    const b = await upload(key, 'c/b.txt');
    const C = '/api/v1/assets/collections';

    expect((await t.rest('GET', C)).status).toBe(401);
    const created = await t.rest('POST', C, { key, body: { name: 'Launch', asset_ids: [a.id] } });
    expect(created.status).toBe(201);
    expect(created.headers.get('etag')).toBe('"1"');
    expect(created.body).toEqual({
      success: true,
      data: {
        id: expect.any(String),
        name: 'Launch',
        description: null,
        asset_ids: [a.id],
        revision: 1,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    const id = created.body.data.id;
    expect((await t.rest('POST', C, { key, body: { name: 'Launch' } })).status).toBe(409);
    expect((await t.rest('POST', C, { key, body: { name: 'x', extra: 1 } })).status).toBe(400);
    // Spec 7.3: an asset that is not visible is a 404 (the request itself is well formed).
    const unknown = await t.rest('POST', C, { key, body: { name: 'y', asset_ids: ['nope'] } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.details.unknown_asset_ids).toEqual(['nope']);

    const list = await t.rest('GET', C, { key });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual({ items: [expect.objectContaining({ id, name: 'Launch' })], next_cursor: '' });
    const one = await t.rest('GET', `${C}/${id}`, { key });
    expect(one.status).toBe(200);
    expect(one.headers.get('etag')).toBe('"1"');
    expect((await t.rest('GET', `${C}/00000000-0000-4000-8000-000000000000`, { key })).status).toBe(404);
    const other = await t.createKey();
    expect((await t.rest('GET', `${C}/${id}`, { key: other.key })).status).toBe(404);

    expect((await t.rest('PUT', `${C}/${id}`, { key, body: { asset_ids: [a.id, b.id] } })).status).toBe(428);
    expect((await t.rest('PUT', `${C}/${id}`, { key, body: { asset_ids: [b.id] }, headers: { 'if-match': '"7"' } })).status).toBe(
      412,
    );
    const put = await t.rest('PUT', `${C}/${id}`, {
      key,
      body: { asset_ids: [a.id, b.id], description: 'two' },
      headers: { 'if-match': '"1"' },
    });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ asset_ids: [a.id, b.id], description: 'two', revision: 2 });
    expect(put.headers.get('etag')).toBe('"2"');
    // Concurrent writers with one revision: exactly one wins.
    const race = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        t.rest('PUT', `${C}/${id}`, { key, body: { description: `d${i}` }, headers: { 'if-match': '"2"' } }),
      ),
    );
    expect(race.filter((r) => r.status === 200)).toHaveLength(1);
    expect(race.filter((r) => r.status === 412)).toHaveLength(5);

    const ro = await t.createKey({ account: other.account, role: 'read_only' });
    expect((await t.rest('POST', C, { key: ro.key, body: { name: 'z' } })).status).toBe(403);
    const readScope = await t.createKey({ scopes: ['assets:read'] });
    expect((await t.rest('POST', C, { key: readScope.key, body: { name: 'z' } })).status).toBe(403);

    expect((await t.rest('DELETE', `${C}/${id}`, { key })).status).toBe(428);
    expect((await t.rest('DELETE', `${C}/${id}`, { key, headers: { 'if-match': '"2"' } })).status).toBe(412);
    const del = await t.rest('DELETE', `${C}/${id}`, { key, headers: { 'if-match': '"3"' } });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id, deleted: true });
    expect((await t.rest('GET', `${C}/${id}`, { key })).status).toBe(404);
  }, 60_000);

  it('saved searches: a filter object of the list route, run with the same filters, revision-guarded', async () => {
    const { key } = await t.createKey();
    await upload(key, 'docs/one.txt', 'one', { tags: 'red' });
    await upload(key, 'docs/two.txt', 'two!', { tags: 'blue' });
    await upload(key, 'misc/three.txt', 'three', { tags: 'red' });
    const S = '/api/v1/assets/saved-searches';
    expect((await t.rest('POST', S, { key, body: { name: 'bad', filter: { colour: 'red' } } })).status).toBe(400);
    expect((await t.rest('POST', S, { key, body: { name: 'bad', filter: { sort: 'weight' } } })).status).toBe(400);
    const made = await t.rest('POST', S, {
      key,
      body: { name: 'Red docs', filter: { prefix: 'docs/', tag: 'red', sort: 'key', direction: 'asc' } },
    });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ name: 'Red docs', filter: { prefix: 'docs/', tag: 'red', sort: 'key' }, revision: 1 });
    const id = made.body.data.id;
    expect((await t.rest('POST', S, { key, body: { name: 'Red docs', filter: {} } })).status).toBe(409);

    const run = await t.rest('GET', `${S}/${id}/assets`, { key });
    expect(run.status).toBe(200);
    expect(run.body.data.total).toBe(1);
    expect(run.body.data.assets.map((x: any) => x.key)).toEqual(['docs/one.txt']);
    expect(run.body.data.next_cursor).toBe('');

    expect((await t.rest('PUT', `${S}/${id}`, { key, body: { filter: { tag: 'red' } } })).status).toBe(428);
    expect(
      (await t.rest('PUT', `${S}/${id}`, { key, body: { filter: { tag: 'red' } }, headers: { 'if-match': '"9"' } })).status,
    ).toBe(412);
    const put = await t.rest('PUT', `${S}/${id}`, {
      key,
      body: { filter: { tag: 'red', sort: 'key', direction: 'asc' } },
      headers: { 'if-match': '1' },
    });
    expect(put.status).toBe(200);
    expect(put.headers.get('etag')).toBe('"2"');
    const page1 = await t.rest('GET', `${S}/${id}/assets?limit=1`, { key });
    expect(page1.body.data.total).toBe(2);
    expect(page1.body.data.assets.map((x: any) => x.key)).toEqual(['docs/one.txt']);
    const page2 = await t.rest('GET', `${S}/${id}/assets?limit=1&cursor=${encodeURIComponent(page1.body.data.next_cursor)}`, {
      key,
    });
    expect(page2.body.data.assets.map((x: any) => x.key)).toEqual(['misc/three.txt']);

    const list = await t.rest('GET', S, { key });
    expect(list.body.data.items.map((x: any) => x.id)).toEqual([id]);
    expect((await t.rest('GET', `${S}/${id}`, { key: (await t.createKey()).key })).status).toBe(404);
    expect((await t.rest('DELETE', `${S}/${id}`, { key })).status).toBe(428);
    expect((await t.rest('DELETE', `${S}/${id}`, { key, headers: { 'if-match': '"2"' } })).status).toBe(200);
    expect((await t.rest('GET', `${S}/${id}/assets`, { key })).status).toBe(404);
  }, 60_000);

  it('bulk: each item on its own revision (stale → 412, missing → 404), the rest applied, job polled to the end', async () => {
    const { key } = await t.createKey();
    const a = await upload(key, 'b/a.txt');
    const b = await upload(key, 'b/b.txt');
    const c = await upload(key, 'b/c.txt');
    const d = await upload(key, 'b/d.txt');
    const B = '/api/v1/assets/bulk';
    expect((await t.rest('POST', B, { body: { items: [{ asset_id: a.id, revision: 1, action: 'delete' }] } })).status).toBe(401);
    expect((await t.rest('POST', B, { key, body: { items: [] } })).status).toBe(400);
    expect(
      (await t.rest('POST', B, { key, body: { items: [{ asset_id: a.id, revision: 1, action: 'visibility' }] } })).status,
    ).toBe(400);
    expect((await t.rest('POST', B, { key, body: { items: [{ asset_id: a.id, revision: 1, action: 'rename' }] } })).status).toBe(
      400,
    );
    const ro = await t.createKey({ scopes: ['assets:read'] });
    expect(
      (await t.rest('POST', B, { key: ro.key, body: { items: [{ asset_id: a.id, revision: 1, action: 'delete' }] } })).status,
    ).toBe(403);

    const sub = await t.rest('POST', B, {
      key,
      body: {
        items: [
          { asset_id: a.id, revision: 1, action: 'visibility', visibility: 'public' },
          { asset_id: a.id, revision: 2, action: 'add_tags', tags: ['x', 'y'] },
          { asset_id: b.id, revision: 5, action: 'add_tags', tags: ['stale'] },
          { asset_id: c.id, revision: 1, action: 'delete' },
          { asset_id: 'no-such-asset', revision: 1, action: 'delete' },
          { asset_id: d.id, revision: 1, action: 'add_tags', tags: ['kept'] },
        ],
      },
    });
    expect(sub.status).toBe(202);
    expect(sub.body.data).toMatchObject({
      job_id: expect.any(String),
      status: 'queued',
      status_url: expect.stringContaining('/api/v1/assets/jobs/'),
    });
    const jobId = sub.body.data.job_id;
    const job = await until(
      () => t.rest('GET', `${B}/${jobId}`, { key }),
      (r) => r.body.data?.status === 'succeeded',
    );
    expect(job.status).toBe(200);
    expect(job.body.data).toMatchObject({ status: 'succeeded', total: 6, succeeded: 4, failed: 2, next_cursor: '' });
    const r = job.body.data.results;
    expect(r.map((x: any) => [x.status, x.status_code])).toEqual([
      ['succeeded', 200],
      ['succeeded', 200],
      ['failed', 412],
      ['succeeded', 200],
      ['failed', 404],
      ['succeeded', 200],
    ]);
    expect(r[2]).toMatchObject({ error_code: 'assets.revision_mismatch', revision: 1 });
    expect(r[1].revision).toBe(3);

    const aNow = await t.rest('GET', `/api/v1/assets/${a.id}`, { key });
    expect(aNow.body.data).toMatchObject({ visibility: 'public', revision: 3 });
    expect(aNow.body.data.tags).toEqual(expect.arrayContaining(['x', 'y']));
    expect((await t.rest('GET', `/api/v1/assets/${b.id}`, { key })).body.data).toMatchObject({ revision: 1, tags: [] });
    // The delete item made a delete job like DELETE /{assetID}: the asset goes away.
    const gone = await until(
      () => t.rest('GET', `/api/v1/assets/${c.id}`, { key }),
      (x) => x.status === 404,
    );
    expect(gone.status).toBe(404);
    expect((await t.rest('GET', `/api/v1/assets/jobs/${r[3].delete_job_id}`, { key })).body.data.status).toBe('succeeded');

    const page = await t.rest('GET', `${B}/${jobId}?limit=4`, { key });
    expect(page.body.data.results).toHaveLength(4);
    const rest = await t.rest('GET', `${B}/${jobId}?limit=4&cursor=${encodeURIComponent(page.body.data.next_cursor)}`, { key });
    expect(rest.body.data.results.map((x: any) => x.index)).toEqual([4, 5]);
    expect((await t.rest('GET', `${B}/${jobId}`, { key: (await t.createKey()).key })).status).toBe(404);
  }, 90_000);

  it('webhooks: secret once, Standard Webhooks signatures, deliveries with attempts, backoff, retry, outbound safety', async () => {
    const { key } = await t.createKey();
    const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    let failNext = 0;
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (failNext > 0) {
          failNext--;
          res.writeHead(500).end('try again');
          return;
        }
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    try {
      const W = '/api/v1/assets/webhooks';
      expect((await t.rest('POST', W, { body: { url, event_types: ['asset.created'] } })).status).toBe(401);
      expect((await t.rest('POST', W, { key, body: { url, event_types: ['asset.exploded'] } })).status).toBe(400);
      expect((await t.rest('POST', W, { key, body: { url: 'http://10.0.0.1/x', event_types: ['asset.created'] } })).status).toBe(
        400,
      );
      expect(
        (await t.rest('POST', W, { key, body: { url: 'https://user:pw@example.com/x', event_types: ['asset.created'] } })).status,
      ).toBe(400);
      const member = await t.createKey({ scopes: ['assets:read', 'assets:write'] });
      expect((await t.rest('POST', W, { key: member.key, body: { url, event_types: ['asset.created'] } })).status).toBe(403);

      const made = await t.rest('POST', W, {
        key,
        body: { url, event_types: ['asset.created', 'asset.processed', 'asset.updated', 'job.finished'], description: 'ci' },
      });
      expect(made.status).toBe(201);
      const hook = made.body.data;
      expect(hook.secret).toMatch(/^whsec_/);
      const list = await t.rest('GET', W, { key });
      expect(list.body.data.items).toEqual([expect.objectContaining({ id: hook.id, url })]);
      expect(JSON.stringify(list.body)).not.toContain(hook.secret);
      expect(list.body.data.items[0].secret).toBeUndefined();

      const asset = await upload(key, 'w/a.txt');
      const wh = new Webhook(hook.secret);
      const got = await until(
        async () => received.map((r) => JSON.parse(r.body).type as string),
        (types) => types.includes('asset.created') && types.includes('asset.processed'),
        60_000,
      );
      expect(got).toEqual(expect.arrayContaining(['asset.created', 'asset.processed']));
      for (const r of received) {
        const verified = wh.verify(r.body, {
          'webhook-id': String(r.headers['webhook-id']),
          'webhook-timestamp': String(r.headers['webhook-timestamp']),
          'webhook-signature': String(r.headers['webhook-signature']),
        }) as any;
        expect(verified.data.asset_id).toBe(asset.id);
      }
      expect(() =>
        new Webhook(`whsec_${Buffer.from('wrong-secret-wrong-secret').toString('base64')}`).verify(
          received[0].body,
          received[0].headers as any,
        ),
      ).toThrow();

      // A receiver that fails: the attempts are kept, the delivery backs off, then succeeds.
      failNext = 1;
      const tagged = await t.rest('PUT', `/api/v1/assets/${asset.id}/tags`, { key, body: { tags: ['t'] } });
      expect(tagged.status).toBe(200);
      const D = `${W}/${hook.id}/deliveries`;
      const updated = await until(
        () => t.rest('GET', `${D}?limit=50`, { key }),
        (r) => r.body.data?.items?.some((d: any) => d.event_type === 'asset.updated' && d.status === 'succeeded'),
      );
      const upd = updated.body.data.items.find((d: any) => d.event_type === 'asset.updated');
      expect(upd.attempts).toHaveLength(2);
      expect(upd.attempts[0]).toMatchObject({ status_code: 500, response_excerpt: 'try again', duration_ms: expect.any(Number) });
      expect(upd.attempts[1].status_code).toBe(204);
      expect(new Date(upd.attempts[1].at).getTime() - new Date(upd.attempts[0].at).getTime()).toBeGreaterThanOrEqual(100);
      const ids = received.filter((r) => JSON.parse(r.body).type === 'asset.updated').map((r) => r.headers['webhook-id']);
      expect(ids).toEqual([upd.event_id]);

      // Exhausted after ASSETS_WEBHOOK_MAX_ATTEMPTS, then a manual retry sends it again under the same event id.
      failNext = 3;
      const bulk = await t.rest('POST', '/api/v1/assets/bulk', {
        key,
        body: { items: [{ asset_id: asset.id, revision: 99, action: 'add_tags', tags: ['z'] }] },
      });
      expect(bulk.status).toBe(202);
      const failed = await until(
        () => t.rest('GET', `${D}?status=failed`, { key }),
        (r) => r.body.data?.items?.length === 1,
      );
      const f = failed.body.data.items[0];
      expect(f).toMatchObject({ event_type: 'job.finished', status: 'failed', attempt_count: 3, next_attempt_at: null });
      const retry = await t.rest('POST', `/api/v1/assets/webhook-deliveries/${f.id}/retry`, { key });
      expect(retry.status).toBe(202);
      expect(retry.body.data.status).toBe('pending');
      const done = await until(
        () => t.rest('GET', `${D}?status=succeeded&limit=50`, { key }),
        (r) => r.body.data?.items?.some((d: any) => d.id === f.id),
      );
      expect(done.body.data.items.find((d: any) => d.id === f.id).attempt_count).toBe(4);
      const fin = received.find((r) => JSON.parse(r.body).type === 'job.finished')!;
      expect(fin.headers['webhook-id']).toBe(f.event_id);
      expect(JSON.parse(fin.body).data).toMatchObject({ job_id: bulk.body.data.job_id, total: 1, failed: 1 });

      // A worker that died holding a claim: once its lease lapses another sends it again, same id.
      const deliveries = t.platform.conn.collection('asset_webhook_deliveries');
      await deliveries.updateOne(
        { _id: upd.id },
        { $set: { status: 'pending', leaseUntil: new Date(Date.now() - 1000), nextAttemptAt: new Date(Date.now() + 3_600_000) } },
      );
      const resent = await until(
        () => t.rest('GET', `${D}?status=succeeded&limit=50`, { key }),
        (r) => r.body.data?.items?.some((d: any) => d.id === upd.id && d.attempt_count === 3),
      );
      expect(resent.body.data.items.find((d: any) => d.id === upd.id).attempt_count).toBe(3);
      expect(received.filter((r) => r.headers['webhook-id'] === upd.event_id)).toHaveLength(2);

      // Quarantine and delete reach a second webhook subscribed to them, signed with its own secret.
      const hook2 = (await t.rest('POST', W, { key, body: { url, event_types: ['asset.quarantined', 'asset.deleted'] } })).body
        .data;
      const eicar = await upload(key, 'w/eicar.txt', EICAR);
      const current = (await t.rest('GET', `/api/v1/assets/${asset.id}`, { key })).body.data.revision;
      expect(
        (await t.rest('DELETE', `/api/v1/assets/${asset.id}`, { key, headers: { 'if-match': String(current) } })).status,
      ).toBe(202);
      const wh2 = new Webhook(hook2.secret);
      const seen = await until(
        async () =>
          received
            .filter((r) => ['asset.quarantined', 'asset.deleted'].includes(JSON.parse(r.body).type))
            .map((r) => wh2.verify(r.body, r.headers as Record<string, string>) as any),
        (v) => v.length >= 2,
        60_000,
      );
      expect(seen.map((v) => `${v.type} ${v.data.asset_id}`).sort()).toEqual(
        [`asset.deleted ${asset.id}`, `asset.quarantined ${eicar.id}`].sort(),
      );
      expect(
        (await t.rest('POST', `/api/v1/assets/webhook-deliveries/00000000-0000-4000-8000-000000000000/retry`, { key })).status,
      ).toBe(404);
      expect((await t.rest('GET', `${D}?status=weird`, { key })).status).toBe(400);
      const stranger = await t.createKey();
      expect((await t.rest('GET', D, { key: stranger.key })).status).toBe(404);
      expect((await t.rest('POST', `/api/v1/assets/webhook-deliveries/${f.id}/retry`, { key: stranger.key })).status).toBe(404);
      expect((await t.rest('DELETE', `${W}/${hook.id}`, { key: stranger.key })).status).toBe(404);
      const del = await t.rest('DELETE', `${W}/${hook.id}`, { key });
      expect(del.status).toBe(200);
      expect(del.body.data).toEqual({ id: hook.id, deleted: true });
      expect((await t.rest('GET', D, { key })).status).toBe(404);
    } finally {
      await new Promise((r) => server.close(r));
    }
  }, 120_000);
});
