import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import mysqlp from 'mysql2/promise';
import {
  allocateSiteDatabase,
  dropSiteDatabase,
  dumpSiteDatabase,
  loadSiteDatabase,
  parseMysqlUrl,
  siteDatabaseExists,
  siteDatabaseName,
  siteUserName,
} from '../../dataplane/site-database';
import { databaseFile } from '../../dataplane/runtimes/ghost';
import { mariadbUp } from '../../infra/mariadb';
import { startTestPlatform, type TestPlatform, uniqueName } from '../support/platform';
import { viaEdge } from '../support/edge';
import { type AdminAccess, adminApi as adminApiOf, adminKey as adminKeyOf } from './ghost-admin';
import { PREFIX, projectPath } from './support';

/**
 * Sites on MySQL (docs/decisions/0220-mysql-adapter.md), against the real MariaDB 10.11 stand-in
 * (infra/mariadb.ts: installed once from the Debian archive into <DATA_DIR>/mariadb, one server per
 * machine on MARIADB_PORT, started here when it is not up). The first block is the platform's side
 * alone (a database and user per site, dump and load); the second runs Ghost on it end to end.
 */

let adminUrl: string;
const figures: Record<string, unknown> = {};

beforeAll(async () => {
  const up = await mariadbUp();
  adminUrl = up.url;
  figures.mariadb = { started: up.started, installMs: up.installMs, startMs: up.startMs };
}, 300_000);

afterAll(() => console.log(`site-mysql figures: ${JSON.stringify(figures)}`));

describe("a site's MySQL database: created, dumped, loaded and dropped by the platform", () => {
  const siteId = `t${uniqueName('db').replace(/-/g, '_')}`;

  afterAll(() => dropSiteDatabase(parseMysqlUrl(adminUrl), siteId));

  it('creates a database and a user that sees only it; a dump taken while writing loads back exactly; drop removes both', async () => {
    const admin = parseMysqlUrl(adminUrl);
    const db = await allocateSiteDatabase(admin, siteId, 'first-password');
    // Allocating again (a retried step) keeps one user, with the sealed password.
    await allocateSiteDatabase(admin, siteId, 'first-password');
    expect(db).toMatchObject({ database: siteDatabaseName(siteId), user: siteUserName(siteId) });
    expect(db.user.length).toBeLessThanOrEqual(32);
    const c = await mysqlp.createConnection({ ...db, multipleStatements: true });
    try {
      const [dbs] = await c.query<mysqlp.RowDataPacket[]>('SHOW DATABASES');
      expect(dbs.map((r) => r.Database).filter((n: string) => n !== 'information_schema')).toEqual([db.database]);
      await c.query(`CREATE TABLE posts (
        id VARCHAR(24) PRIMARY KEY, title TEXT NOT NULL, body LONGTEXT NULL, meta JSON NULL, cover BLOB NULL,
        views BIGINT UNSIGNED NOT NULL, price DECIMAL(10,2) NULL, published_at DATETIME NULL, created TIMESTAMP NOT NULL
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
      CREATE TABLE tags (id INT AUTO_INCREMENT PRIMARY KEY, post_id VARCHAR(24) NOT NULL,
        FOREIGN KEY (post_id) REFERENCES posts(id)) ENGINE=InnoDB`);
      const tricky = 'it\'s a "quote";\nline two\\ and ;\n-- not a comment\n\u{1F600} ünïcode';
      const rows = Array.from({ length: 450 }, (_, i) => [
        `p${String(i).padStart(5, '0')}`,
        i === 0 ? tricky : `Post ${i}`,
        i % 3 === 0 ? null : 'x'.repeat(i),
        JSON.stringify({ i, s: 'a"b' }),
        Buffer.from([0, 1, 2, 255, 10, 13, 39, 92, i % 256]),
        '18446744073709551615',
        i % 2 ? '12.34' : null,
        '2026-11-27 09:00:00',
        '2026-01-01 00:00:01',
      ]);
      await c.query('INSERT INTO posts VALUES ?', [rows]);
      await c.query('INSERT INTO tags (post_id) VALUES (?), (?)', ['p00000', 'p00001']);
      const snapshot = async () => {
        const [p] = await c.query('SELECT *, HEX(cover) AS h FROM posts ORDER BY id');
        const [t] = await c.query('SELECT * FROM tags ORDER BY id');
        return JSON.stringify([p, t]);
      };
      const before = await snapshot();

      // The dump is one state even while the site writes during it.
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (b: Buffer) => chunks.push(b));
      const t0 = Date.now();
      const dumping = dumpSiteDatabase(db, out);
      await c.query("UPDATE posts SET title = 'changed during the dump'");
      await dumping;
      figures.dumpMs = Date.now() - t0;
      const sql = Buffer.concat(chunks).toString('utf8');
      expect(sql).not.toContain(db.password);

      // Changes after the point, and a table a later migration added, are gone after loading.
      await c.query("DELETE FROM tags; DELETE FROM posts WHERE id <> 'p00000'; CREATE TABLE added_later (x INT)");
      const t1 = Date.now();
      await loadSiteDatabase(db, Readable.from([Buffer.from(sql)]));
      figures.loadMs = Date.now() - t1;
      const after = await snapshot();
      const [titles] = await c.query<mysqlp.RowDataPacket[]>(
        "SELECT COUNT(*) AS n FROM posts WHERE title = 'changed during the dump'",
      );
      const [tables] = await c.query<mysqlp.RowDataPacket[]>('SHOW TABLES');
      // Either all rows were dumped before the update committed, or all after: never a mix.
      expect([0, 450]).toContain(titles[0].n);
      if (titles[0].n === 0) expect(after).toBe(before);
      expect(tables.map((r) => Object.values(r)[0]).sort()).toEqual(['posts', 'tags']);
      const [[first]] = await c.query<mysqlp.RowDataPacket[]>("SELECT title FROM posts WHERE id = 'p00000'");
      if (titles[0].n === 0) expect(first.title).toBe(tricky);
    } finally {
      await c.end();
    }
    // The user cannot reach another site's database or create one.
    const other = await mysqlp.createConnection({ ...db });
    await expect(other.query('CREATE DATABASE site_not_mine')).rejects.toMatchObject({ code: 'ER_DBACCESS_DENIED_ERROR' });
    await other.end();

    await dropSiteDatabase(admin, siteId);
    expect(await siteDatabaseExists(admin, siteId)).toEqual({ database: false, user: false });
    await dropSiteDatabase(admin, siteId); // nothing left: fine
  });
});

describe('a Ghost site on MySQL (MariaDB 10.11), end to end through the REST API and the edge', () => {
  let t: TestPlatform;
  let key: string;
  let projectId: string;
  let host: string;
  let post: { id: string; slug: string };

  const waitFor = async (project: string, operationId: string, timeoutMs = 10 * 60_000): Promise<any> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const op = (await t.rest('GET', projectPath(project, `/operations/${operationId}`), { key })).body?.data;
      if (op && (op.status === 'completed' || op.status === 'failed')) return op;
      if (Date.now() > until) throw new Error(`operation ${operationId} still ${op?.status}/${op?.step}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const accepted = async (project: string, method: string, p: string, body?: unknown) => {
    const res = await t.rest(method, projectPath(project, p), { key, body });
    expect(res.status).toBe(202);
    return { res, op: await waitFor(project, res.body.data.operation.id) };
  };
  const adminKey = (project = projectId) => adminKeyOf(t, project);
  const adminApi = (access: AdminAccess) => adminApiOf(t, access);
  const postPage = async (siteHost = host) => (await viaEdge(t.platform.edgeUrl!, siteHost, 'GET', `/${post.slug}/`)).status;
  const storedDb = (id: string) => t.platform.conn.collection('publisher_site_databases').findOne({ _id: id as never });
  const admin = () => parseMysqlUrl(adminUrl);

  beforeAll(async () => {
    t = await startTestPlatform({ PUBLISHER_EXECUTOR: 'real', PUBLISHER_MYSQL_URL: adminUrl });
    ({ key } = await t.createKey());
    const t0 = Date.now();
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'MySQL Site' } });
    expect(created.status).toBe(202);
    projectId = created.body.data.project.id;
    host = new URL(created.body.data.site_url).host;
    const op = await waitFor(projectId, created.body.data.operation.id, 25 * 60_000);
    if (op.status !== 'completed') throw new Error(`provision failed: ${op.error_code} ${op.error_message}`);
    figures.provisionMs = Date.now() - t0;
  }, 30 * 60_000);

  afterAll(async () => {
    await t?.stop();
  }, 120_000);

  it(
    'provisions the site on its own database and user; the process is told them; the password is sealed and never served',
    async () => {
      expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', '/')).status).toBe(200);
      expect(await siteDatabaseExists(admin(), projectId)).toEqual({ database: true, user: true });
      const doc = await storedDb(projectId);
      expect(doc).toMatchObject({ client: 'mysql', database: siteDatabaseName(projectId), user: siteUserName(projectId) });
      const db = (await t.platform.services.publisher.real.databases!.get(projectId))!;
      expect(db.password.length).toBeGreaterThanOrEqual(24);
      expect(JSON.stringify(doc)).not.toContain(db.password);

      const pid = t.platform.dataPlane!.supervisor.status(projectId)!.pid!;
      const env = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      expect(env).toMatchObject({
        database__client: 'mysql',
        database__connection__database: siteDatabaseName(projectId),
        database__connection__user: siteUserName(projectId),
        database__connection__password: db.password,
      });
      expect(env.database__connection__filename).toBeUndefined();
      expect(existsSync(databaseFile(t.platform.dataPlane!.sites.siteDir(projectId)))).toBe(false);
      // Ghost's tables are in the site's MySQL database.
      const c = await mysqlp.createConnection({ ...db });
      const [[row]] = await c.query<mysqlp.RowDataPacket[]>('SELECT COUNT(*) AS n FROM migrations');
      await c.end();
      expect(row.n).toBeGreaterThan(100);

      const responses = [
        (await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body,
        (await t.rest('GET', projectPath(projectId, '/history'), { key })).body,
        (await t.rest('GET', projectPath(projectId, '/operations'), { key })).body,
      ];
      for (const body of responses) expect(JSON.stringify(body)).not.toContain(db.password);
      expect(t.platform.dataPlane!.supervisor.logs(projectId).join('\n')).not.toContain(db.password);
    },
    5 * 60_000,
  );

  it(
    'a recovery point holds a dump of the MySQL database; restore brings a deleted post back',
    async () => {
      post = await adminApi(await adminKey()).posts.add({ title: 'Stored in MySQL', status: 'published' });
      expect(await postPage()).toBe(200);
      const t0 = Date.now();
      const { res, op } = await accepted(projectId, 'POST', '/recovery-points', { reason: 'mysql' });
      figures.recoveryPointMs = Date.now() - t0;
      expect(op).toMatchObject({ status: 'completed' });
      const pointId = res.body.data.recovery_point.id;
      const point = (await t.rest('GET', projectPath(projectId, '/recovery-points'), { key })).body.data.find(
        (p: any) => p.id === pointId,
      );
      expect(point.database).toMatchObject({ status: 'captured', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
      figures.dumpBytes = point.database.size_bytes;
      let head = '';
      for await (const chunk of t.platform.services.publisher.real.backups.store.read('recovery-points', point.database.sha256)) {
        head += (chunk as Buffer).toString('utf8');
        if (head.length > 2000) break;
      }
      expect(head.startsWith('SET NAMES utf8mb4;')).toBe(true);
      expect(head).toContain('CREATE TABLE');

      await adminApi(await adminKey()).posts.delete({ id: post.id });
      expect(await postPage()).toBe(404);
      const t1 = Date.now();
      const restored = await accepted(projectId, 'POST', `/recovery-points/${pointId}/restore`);
      figures.restoreMs = Date.now() - t1;
      expect(restored.op).toMatchObject({ status: 'completed' });
      expect(await postPage()).toBe(200);
    },
    5 * 60_000,
  );

  it(
    'a staging copy gets its own MySQL database with the post; deleting it drops only its database and user',
    async () => {
      const res = await t.rest('POST', projectPath(projectId, '/staging'), { key, body: { name: 'MySQL staging' } });
      expect(res.status).toBe(202);
      const copy = res.body.data;
      expect(await waitFor(projectId, copy.operation.id)).toMatchObject({ status: 'completed' });
      const copyHost = new URL(copy.site_url).host;
      expect(await postPage(copyHost)).toBe(200);
      expect(await siteDatabaseExists(admin(), copy.project.id)).toEqual({ database: true, user: true });
      // Its own key opens it; the copy's database is a separate one.
      const own = await adminKey(copy.project.id);
      const draft = await adminApi(own).posts.add({ title: 'Only on staging', status: 'published' });
      expect((await viaEdge(t.platform.edgeUrl!, host, 'GET', `/${draft.slug}/`)).status).toBe(404);

      const del = await accepted(copy.project.id, 'POST', '/actions', { action: 'delete' });
      expect(del.op).toMatchObject({ status: 'completed' });
      expect(await siteDatabaseExists(admin(), copy.project.id)).toEqual({ database: false, user: false });
      expect(await storedDb(copy.project.id)).toBeNull();
      expect(await siteDatabaseExists(admin(), projectId)).toEqual({ database: true, user: true });
      expect(await postPage()).toBe(200);
    },
    5 * 60_000,
  );

  it(
    'an upgrade that damages the data and fails its health check rolls back from the dump: post intact',
    async () => {
      const source = await adminKey();
      t.platform.services.publisher.real.injectFault({
        operationType: 'upgrade',
        step: 'health_check',
        version: '5.130.6',
        code: 'health_check_failed',
        before: async () => {
          await adminApi(source).posts.delete({ id: post.id });
        },
      });
      const { op } = await accepted(projectId, 'POST', '/upgrades', { target_version: '5.130.6' });
      expect(op).toMatchObject({ status: 'failed', error_code: 'upgrade_failed' });
      expect(op.steps.map((s: any) => [s.id, s.status])).toEqual(expect.arrayContaining([['rollback', 'completed']]));
      expect(await postPage()).toBe(200);
    },
    5 * 60_000,
  );

  it(
    'delete drops the site database and user',
    async () => {
      const { op } = await accepted(projectId, 'POST', '/actions', { action: 'delete' });
      expect(op).toMatchObject({ status: 'completed' });
      expect(await siteDatabaseExists(admin(), projectId)).toEqual({ database: false, user: false });
      expect(await storedDb(projectId)).toBeNull();
      expect(existsSync(path.join(t.platform.dataPlane!.sites.siteDir(projectId)))).toBe(false);
    },
    5 * 60_000,
  );
});
