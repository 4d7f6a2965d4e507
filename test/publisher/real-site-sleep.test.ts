import { startTestPlatform, type TestPlatform } from '../support/platform';
import { viaEdge } from '../support/edge';
import { adminApi, adminKey } from './ghost-admin';
import { PREFIX, projectPath } from './support';

/**
 * Sleep and wake of a real Ghost site through the whole platform (docs/decisions/0340-sleep-and-wake.md):
 * a site sleeps after PUBLISHER_IDLE_SLEEP_MS without a request (shortened here), its
 * metadata says so, its first request after is answered 200 with the page by the woken site, a
 * post written through the Admin API before sleeping is there after waking, a recovery point and a
 * restore work on a sleeping site, and the project's activity feed shows sleep and wake as events.
 */

const IDLE_MS = 5_000;

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('a real Ghost site that sleeps when idle', () => {
  let t: TestPlatform;
  let key: string;
  let projectId: string;
  let host: string;

  const rest = (method: string, p: string, body?: unknown) => t.rest(method, projectPath(projectId, p), { key, body });
  const processOf = async () => (await rest('GET', '/metadata')).body?.data?.process;
  const asleep = () => until('the site asleep', async () => (await processOf())?.status === 'sleeping', 90_000);
  const done = (opId: string) =>
    until(
      `operation ${opId}`,
      async () => {
        const op = (await rest('GET', `/operations/${opId}`)).body?.data;
        return op && (op.status === 'completed' || op.status === 'failed') ? op : null;
      },
      10 * 60_000,
    );
  const page = (p = '/') => viaEdge(t.platform.edgeUrl!, host, 'GET', p);

  beforeAll(async () => {
    t = await startTestPlatform({ PUBLISHER_EXECUTOR: 'real', PUBLISHER_IDLE_SLEEP_MS: String(IDLE_MS) });
    ({ key } = await t.createKey({ plan: 'free' }));
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Sleepy Site' } });
    expect(created.status).toBe(202);
    projectId = created.body.data.project.id;
    host = new URL(created.body.data.site_url).host;
    const op = await done(created.body.data.operation.id);
    if (op.status !== 'completed') throw new Error(`provision failed: ${op.error_code} ${op.error_message}`);
  }, 30 * 60_000);

  afterAll(() => t?.stop(), 120_000);

  it(
    'sleeps after the idle time; its first request after is answered 200 with the page, and a post written before is there',
    async () => {
      const api = adminApi(t, await adminKey(t, projectId));
      const post = await api.posts.add({ title: 'Written before sleeping', status: 'published' });
      await asleep();
      const proc = await processOf();
      expect(proc).toMatchObject({ status: 'sleeping', slept_at: expect.any(String) });

      const t0 = Date.now();
      const home = await page();
      const wakeMs = Date.now() - t0;
      expect(home.status).toBe(200);
      expect(home.body).toContain('<meta name="generator" content="Ghost');
      console.log(`first request to a sleeping Ghost site answered in ${wakeMs} ms`);
      expect((await processOf())?.status).toBe('running');
      const again = await api.posts.read({ id: post.id });
      expect(again.title).toBe('Written before sleeping');
      const article = await page(new URL(post.url).pathname);
      expect(article.status).toBe(200);
      expect(article.body).toContain('Written before sleeping');
    },
    5 * 60_000,
  );

  it(
    'takes a recovery point and restores it while the site sleeps',
    async () => {
      const api = adminApi(t, await adminKey(t, projectId));
      const keep = await api.posts.add({ title: 'Kept by the point', status: 'published' });
      await asleep();
      const point = await rest('POST', '/recovery-points', { reason: 'while asleep' });
      expect(point.status).toBe(202);
      expect((await done(point.body.data.operation.id)).status).toBe('completed');
      const id = point.body.data.recovery_point.id;
      // The capture read the site's files: it did not wake the site.
      expect((await processOf())?.status).toBe('sleeping');

      // Gone after the point (this wakes the site), then restored while it sleeps again.
      await api.posts.delete({ id: keep.id });
      await asleep();
      const restore = await rest('POST', `/recovery-points/${id}/restore`);
      expect(restore.status).toBe(202);
      expect((await done(restore.body.data.operation.id)).status).toBe('completed');
      const article = await until('the restored post served', async () => {
        const r = await page(new URL(keep.url).pathname);
        return r.status === 200 ? r : null;
      });
      expect(article.body).toContain('Kept by the point');
    },
    10 * 60_000,
  );

  it(
    'shows sleep and wake in the project’s activity feed, as events',
    async () => {
      const items = await until('sleep and wake in the feed', async () => {
        const r = await t.rest('GET', `/api/v1/projects/${projectId}/operation-activity`, { key });
        const found = (r.body?.data?.history?.items ?? []) as Array<{ type: string; status: string }>;
        return found.some((i) => i.type === 'site.slept') && found.some((i) => i.type === 'site.woke') ? found : null;
      });
      expect(items.find((i) => i.type === 'site.woke')).toMatchObject({ status: 'completed' });
    },
    2 * 60_000,
  );
});
