import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { OutboxRelay } from '../../core/events/outbox';
import { collect } from '../support/collect';
import type { ObjectEvent } from '../../core/events/object-events';
import type { Principal } from '../../core/principal';
import { sweepAbandonedUploads } from '../../subgraphs/assets/storage/workers';
import { form, type Harness, startHarness } from './harness';

/** Asset records: list and cursors, revision guards, delete jobs, versions, object events. */
describe('assets records', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  const upload = async (p: Principal, body: string, fields: Record<string, string> = {}, name = 'f.txt') => {
    const res = await fetch(`${h.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: h.headers(p),
      body: form(body, name, fields),
    });
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(JSON.stringify(json));
    return json.data;
  };

  it('lists with filters, sort, direction, total and a cursor bound to the sort', async () => {
    const p = h.principal();
    for (let i = 0; i < 5; i++) await upload(p, 'x'.repeat(i + 1), { key: `docs/k${i}`, ...(i % 2 ? { tags: 'odd' } : {}) });
    await upload(p, 'other', { key: 'misc/z' });
    const first = await h.assets.list(p, { filter: { prefix: 'docs/' }, sort: 'size', direction: 'asc', limit: 2 });
    expect(first.total).toBe(5);
    expect(first.assets.map((a) => a.key)).toEqual(['docs/k0', 'docs/k1']);
    const second = await h.assets.list(p, {
      filter: { prefix: 'docs/' },
      sort: 'size',
      direction: 'asc',
      limit: 2,
      cursor: first.nextCursor,
    });
    expect(second.assets.map((a) => a.key)).toEqual(['docs/k2', 'docs/k3']);
    const last = await h.assets.list(p, {
      filter: { prefix: 'docs/' },
      sort: 'size',
      direction: 'asc',
      limit: 2,
      cursor: second.nextCursor,
    });
    expect(last.assets.map((a) => a.key)).toEqual(['docs/k4']);
    expect(last.nextCursor).toBe('');
    await expect(
      h.assets.list(p, { filter: { prefix: 'docs/' }, sort: 'key', direction: 'asc', limit: 2, cursor: first.nextCursor }),
    ).rejects.toMatchObject({ status: 400 });
    expect((await h.assets.list(p, { filter: { tag: 'odd' } })).total).toBe(2);
    expect((await h.assets.list(p, { filter: { query: 'Z' } })).assets.map((a) => a.key)).toEqual(['misc/z']);
    expect((await h.assets.list(h.principal(), { filter: {} })).total).toBe(0);
  });

  it('PATCH needs If-Match (428), refuses a stale one (412), and 50 concurrent PATCHes with one revision give exactly one winner', async () => {
    const p = h.principal();
    const a = await upload(p, 'patch me');
    await expect(h.assets.patch(p, a.id, undefined, { visibility: 'public' })).rejects.toMatchObject({ status: 428 });
    await expect(h.assets.patch(p, a.id, '"9"', { visibility: 'public' })).rejects.toMatchObject({ status: 412 });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => h.assets.patch(p, a.id, '"1"', { cacheControl: `max-age=${i}` })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected' && (r.reason as { status: number }).status === 412)).toHaveLength(49);
    expect((await h.assets.get(p, a.id)).revision).toBe(2);
    await expect(h.assets.patch(h.principal(), a.id, '"2"', { visibility: 'public' })).rejects.toMatchObject({ status: 404 });
  });

  it('replaces tags, merges metadata, restores versions and promotes branches', async () => {
    const p = h.principal();
    const a = await upload(p, 'one', { metadata: '{"keep":1,"drop":2}' });
    expect((await h.assets.setTags(p, a.id, null, ['a', 'b', 'a'])).tags).toEqual(['a', 'b']);
    const merged = await h.assets.mergeMetadata(p, a.id, null, { drop: null, add: 'x' });
    expect(merged.metadata).toEqual({ keep: 1, add: 'x' });
    const branched = await h.assets.createBranch(p, a.id, 'draft');
    expect(branched.branches.map((b) => b.name)).toEqual(['draft']);
    const restored = await h.assets.restoreVersion(p, a.id, '1');
    expect(restored.currentVersion).toBe(2);
    const promoted = await h.assets.promoteBranch(p, a.id, 'draft');
    expect(promoted.currentVersion).toBe(3);
    expect((await h.assets.versions(p, a.id)).versions.map((v) => v.number)).toEqual([3, 2, 1]);
  });

  it('a replace keeps its committed blob through an unused-blob check that runs before its version is recorded', async () => {
    const p = h.principal();
    const other = await upload(p, 'shared bytes', { key: 'other.txt' });
    const a = await upload(p, 'first bytes', { key: 'a.txt' });
    const sha = (await h.assets.get(p, other.id)).checksum;
    const region = (await h.assets.get(p, other.id)).homeRegion;
    // Between the replace's commit and its record, the other asset holding the same bytes is
    // deleted: its delete job asks whether anything else uses the blob.
    const blobs = h.assets.blobs as unknown as { commit: (...args: unknown[]) => Promise<void> };
    const commit = blobs.commit.bind(blobs);
    blobs.commit = async (...args: unknown[]) => {
      await commit(...args);
      await h.assets.uploads.dropBlobIfUnused(sha, [region], other.id);
    };
    try {
      const fd = form('shared bytes', 'a.txt');
      const res = await fetch(`${h.bridgeUrl}/api/v1/assets/${a.id}/replace`, { method: 'PUT', headers: h.headers(p), body: fd });
      expect(res.status).toBe(200);
    } finally {
      blobs.commit = commit;
    }
    const replaced = await h.assets.get(p, a.id);
    expect(replaced.checksum).toBe(sha);
    expect(replaced.pendingBlobs ?? []).toEqual([]);
    const chunks: Buffer[] = [];
    for await (const c of h.assets.blobs.read(region, sha)) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('shared bytes');
  });

  it('deletes asynchronously with a job (202 semantics), can cancel a queued delete, and publishes object events through the outbox', async () => {
    const bus = createKafkaEventBus();
    await bus.ensureTopics?.([h.objectsTopic]);
    const collector = await collect<ObjectEvent>(bus, [h.objectsTopic]);
    const relay = new OutboxRelay({ models: [h.assets.m.Asset, h.assets.m.Job], bus, intervalMs: 50 });
    relay.start();
    try {
      const p = h.principal();
      const a = await upload(p, 'to be deleted', { key: 'del/me' });
      await expect(h.assets.requestDelete(p, a.id, undefined)).rejects.toMatchObject({ status: 428 });
      const cancelMe = await h.assets.requestDelete(p, a.id, '"1"');
      expect((await h.assets.get(p, a.id)).status).toBe('deleting');
      expect((await h.assets.cancelJob(p, cancelMe._id)).status).toBe('cancelled');
      const back = await h.assets.get(p, a.id);
      expect(back.status).toBe('ready');
      const job = await h.assets.requestDelete(p, a.id, `"${back.revision}"`);
      await new Promise((r) => setTimeout(r, 250));
      const claimed = await h.assets.claimJob();
      expect(claimed?._id).toBe(job._id);
      await h.assets.runDeleteJob(claimed!);
      expect((await h.assets.getJob(p, job._id)).status).toBe('succeeded');
      await expect(h.assets.get(p, a.id)).rejects.toMatchObject({ status: 404 });
      await expect(h.assets.cancelJob(p, job._id)).rejects.toMatchObject({ status: 409 });

      const msgs = await collector.waitFor((m) => m.filter((x) => x.value.asset_id === a.id).length >= 2);
      const mine = msgs.filter((x) => x.value.asset_id === a.id).map((x) => x.value);
      expect(mine.map((e) => e.type)).toEqual(['object.created', 'object.deleted']);
      expect(mine[0]).toMatchObject({
        key: 'del/me',
        account_id: p.accountId,
        version: 1,
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect(mine[1]).toMatchObject({ key: 'del/me', sha256: null, event_id: expect.any(String) });
      expect(mine[0].event_id).not.toBe(mine[1].event_id);
    } finally {
      await relay.stop();
      await collector.stop();
      await bus.close();
    }
  });

  it('sweeps a record left `processing` by a dead process, and its staged bytes', async () => {
    const p = h.principal();
    const a = await upload(p, 'orphan');
    await h.assets.m.Asset.updateOne(
      { _id: a.id },
      { $set: { status: 'processing', updatedAt: new Date(Date.now() - 3_600_000) } },
    );
    const swept = await sweepAbandonedUploads(h.assets);
    expect(swept.records).toBe(1);
    await expect(h.assets.get(p, a.id)).rejects.toMatchObject({ status: 404 });
  });
});
