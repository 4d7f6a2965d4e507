import { decryptSecret } from '../../core/secrets';
import { startSmtpSink, type SmtpSink } from '../../subgraphs/mail/smtp-sink';
import { aad } from '../../subgraphs/publisher/site-credentials';
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
 * And what docs/spec-decisions.md ("Sleep and wake of idle sites") promises of lifecycle actions on
 * a sleeping site: a start is refused (it is running to the API); a stop keeps it stopped (503, no
 * wake on a request) until a start; a restart wakes it; a staging copy is made without waking its
 * source; an upgrade runs and leaves it awake on the new release. An owner's admin session outlives
 * a sleep as it outlives a restart.
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
  let siteUrl: string;
  let host: string;
  let sink: SmtpSink;

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
  /** A request answered 202 whose operation then completes; answers the request's answer. */
  const completed = async (p: string, body?: unknown) => {
    const res = await rest('POST', p, body);
    expect(res.status).toBe(202);
    expect(await done(res.body.data.operation.id)).toMatchObject({ status: 'completed' });
    return res;
  };
  const action = (name: string) => completed('/actions', { action: name });
  /** The post is still there: the Admin API reads it and its page is served with its title. */
  const stillThere = async (api: ReturnType<typeof adminApi>, post: { id: string; url: string; title: string }) => {
    expect((await api.posts.read({ id: post.id })).title).toBe(post.title);
    const article = await page(new URL(post.url).pathname);
    expect(article.status).toBe(200);
    expect(article.body).toContain(post.title);
  };

  beforeAll(async () => {
    // The site's mail (a staff sign-in's verification code) goes to a sink the test reads.
    sink = await startSmtpSink({ keepRaw: true });
    t = await startTestPlatform({
      PUBLISHER_EXECUTOR: 'real',
      PUBLISHER_IDLE_SLEEP_MS: String(IDLE_MS),
      MAIL_SMTP_URL: sink.url,
    });
    ({ key } = await t.createKey({ plan: 'pro' }));
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Sleepy Site' } });
    expect(created.status).toBe(202);
    projectId = created.body.data.project.id;
    siteUrl = created.body.data.site_url;
    host = new URL(siteUrl).host;
    const op = await done(created.body.data.operation.id);
    if (op.status !== 'completed') throw new Error(`provision failed: ${op.error_code} ${op.error_message}`);
  }, 30 * 60_000);

  afterAll(async () => {
    await t?.stop();
    await sink?.stop();
  }, 120_000);

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
      await stillThere(api, post);
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

  it(
    'keeps an owner’s admin session across a sleep: the cookie signed in before answers 200 after the wake',
    async () => {
      const creds = await t.platform.conn.collection('publisher_site_credentials').findOne({ _id: projectId as never });
      const email: string = creds!.ownerEmail;
      const password = decryptSecret(creds!.ownerPasswordCiphertext, aad(projectId, 'owner_password'));
      // Ghost's session API takes only requests from the site's own origin.
      const origin = new URL(siteUrl).origin;
      const admin = (method: string, p: string, cookie: string, body?: unknown) =>
        viaEdge(t.platform.edgeUrl!, host, method, `/ghost/api/admin/${p}`, {
          headers: { origin, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const sent = sink.received.length;
      const signIn = await admin('POST', 'session/', '', { username: email, password });
      const cookie = (signIn.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
      expect(cookie).toContain('ghost-admin-api-session=');
      // Staff device verification is on (Ghost's production default): a sign-in from a new device
      // waits for the six-digit code Ghost mails the owner, here through the platform's relay.
      expect([signIn.status, JSON.parse(signIn.body).errors?.[0]?.code]).toEqual([403, '2FA_NEW_DEVICE_DETECTED']);
      const mail = await until('the verification code in the mail sink', async () =>
        sink.received.slice(sent).find((m) => m.to.includes(email)),
      );
      const code = /(\d{6}) is your Ghost sign in verification code/.exec(mail.raw ?? '')?.[1];
      expect(code).toMatch(/^\d{6}$/);
      expect((await admin('PUT', 'session/verify/', cookie, { token: code })).status).toBe(200);
      expect((await admin('GET', 'users/me/', cookie)).status).toBe(200);

      await asleep();
      const me = await admin('GET', 'users/me/', cookie);
      expect(me.status).toBe(200);
      expect(JSON.parse(me.body).users[0].email).toBe(email);
      expect((await processOf())?.status).toBe('running');
    },
    5 * 60_000,
  );

  it(
    'makes a staging copy while its source sleeps: the copy serves the source’s posts, the source sleeps on',
    async () => {
      await asleep();
      const copy = (await completed('/staging', { name: 'Sleepy Site staging' })).body.data;
      const home = await viaEdge(t.platform.edgeUrl!, new URL(copy.site_url).host, 'GET', '/');
      expect(home.status).toBe(200);
      expect(home.body).toContain('Written before sleeping');
      // Made from a point of the source's files at rest: the source was not woken.
      expect((await processOf())?.status).toBe('sleeping');
    },
    10 * 60_000,
  );

  it(
    'refuses start on a sleeping site (it is running to the API); a stopped one stays stopped (503, no wake); start and restart wake it',
    async () => {
      await asleep();
      const start = await rest('POST', '/actions', { action: 'start' });
      expect([start.status, start.body.error?.code]).toEqual([409, 'invalid_site_state']);
      expect((await processOf())?.status).toBe('sleeping');

      await action('stop');
      const stopped = async () => {
        const meta = (await rest('GET', '/metadata')).body.data;
        expect(meta.installation.status).toBe('stopped');
        expect(meta.process).toMatchObject({ status: 'stopped', slept_at: null });
      };
      await stopped();
      expect((await page()).status).toBe(503);
      // The request did not wake it, nor does anything later.
      await new Promise((r) => setTimeout(r, 2_000));
      await stopped();
      expect((await page()).status).toBe(503);

      await action('start');
      expect((await processOf())?.status).toBe('running');
      expect((await page()).status).toBe(200);

      await asleep();
      await action('restart');
      // Awake after the restart, before any request.
      expect((await processOf())?.status).toBe('running');
      expect((await page()).status).toBe(200);
    },
    10 * 60_000,
  );

  it(
    'upgrades a sleeping site along the catalog edge: awake after on the new release, a post written before still there',
    async () => {
      const api = adminApi(t, await adminKey(t, projectId));
      const post = await api.posts.add({ title: 'Written before the upgrade', status: 'published' });
      await asleep();
      const res = await completed('/upgrades', { target_version: '5.130.6' });
      expect(res.body.data.from_version).toBe('5.130.5');
      const meta = (await rest('GET', '/metadata')).body.data;
      expect(meta.installation).toMatchObject({ status: 'running', runtime_version: '5.130.6' });
      expect(meta.process.status).toBe('running');
      await stillThere(api, post);
    },
    10 * 60_000,
  );
});
