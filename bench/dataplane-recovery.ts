/**
 * Recovery points of a real Ghost site with 1,000 posts (docs/decisions/0150-recovery-point-bytes.md):
 * the capture time of each part (SQLite online backup while the site runs, the content archive, the
 * release manifest) into the filesystem blob store, and the restore time (stop, database and content
 * back from the store with their hashes checked, start, first healthy answer), with the sizes.
 *
 * Run: `npm run -s build && node dist/bench/dataplane-recovery.js` (BENCH_POSTS, default 1000;
 * BENCH_CONCURRENCY, 8). With PUBLISHER_MYSQL_URL set the site runs on a MySQL database of its own and
 * the database part is a logical dump (docs/decisions/0220-mysql-adapter.md). Needs ghost@5.130.5 in the runtime cache (a cold cache installs it first).
 * Not part of `npm run bench`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../core/blobs/fs-blob-store';
import { Edge } from '../dataplane/edge';
import { setUpGhost, siteRequest } from '../dataplane/runtimes/ghost';
import { RuntimeCache } from '../dataplane/runtime-cache';
import { SiteBackups, siteBytes } from '../dataplane/site-backup';
import { allocateSiteDatabase, dropSiteDatabase, newDatabasePassword, parseMysqlUrl } from '../dataplane/site-database';
import { SiteHost } from '../dataplane/sites';
import { Supervisor } from '../dataplane/supervisor';

const GhostAdminAPI = require('@tryghost/admin-api');

const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

/** A paragraph of text as Ghost's editor stores it (about 1 KB per post). */
function lexical(i: number): string {
  const text = `Post ${i}. ${'The platform keeps every byte of this site in its recovery points. '.repeat(15)}`;
  return JSON.stringify({
    root: {
      type: 'root',
      version: 1,
      indent: 0,
      direction: null,
      format: '',
      children: [
        {
          type: 'paragraph',
          version: 1,
          indent: 0,
          direction: null,
          format: '',
          children: [{ type: 'text', version: 1, text, detail: 0, format: 0, mode: 'normal', style: '' }],
        },
      ],
    },
  });
}

async function main(): Promise<void> {
  const posts = Number(process.env.BENCH_POSTS ?? 1000);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
  const cache = new RuntimeCache();
  const sup = new Supervisor();
  const edge = new Edge({ port: 0 });
  const root = mkdtempSync(path.join(tmpdir(), 'bench-recovery-'));
  const sitesRoot = path.join(root, 'sites');
  const sites = new SiteHost({ cache, supervisor: sup, edge, sitesRoot });
  const backups = new SiteBackups(new FsBlobStore(path.join(root, 'blobs')));
  const mysqlAdmin = process.env.PUBLISHER_MYSQL_URL ? parseMysqlUrl(process.env.PUBLISHER_MYSQL_URL) : undefined;
  const siteId = `bench_${process.pid}`;
  try {
    const runtime = await sites.pullRuntime(GHOST);
    await edge.listen();
    const host = `bench.sites.localhost:${edge.port}`;
    const url = `http://${host}/`;
    const database = mysqlAdmin ? await allocateSiteDatabase(mysqlAdmin, siteId, newDatabasePassword()) : undefined;
    const site = { siteId, runtime: GHOST, url, hosts: [host], memoryMb: 512, database };
    let t = Date.now();
    let { port } = await sites.start(site);
    console.log(`${database ? 'MySQL' : 'SQLite'} site: first start (migrations) to healthy ${Date.now() - t} ms`);
    const access = await setUpGhost(sites.endpoint(siteId), url, { name: 'Bench', email: 'bench@example.test', title: 'Bench' });
    const api = new GhostAdminAPI({
      url: url.replace(/\/$/, ''),
      key: access.adminApiKey,
      version: 'v5.0',
      makeRequest: async ({ url: u, method, data, params, headers }: any) => {
        const target = new URL(u);
        for (const [k, v] of Object.entries(params ?? {})) target.searchParams.set(k, String(v));
        const m = method.toUpperCase();
        // A DELETE carries no body (the SDK passes the id it already put in the path).
        const body = m === 'DELETE' ? undefined : data;
        const r = await siteRequest(port, url, m, target.pathname + target.search, { body, headers });
        if (r.status >= 400) throw new Error(`${r.status} ${r.body.slice(0, 200)}`);
        return r.body ? JSON.parse(r.body) : {};
      },
    });
    t = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < posts) {
          const i = next++;
          await api.posts.add({ title: `Bench post ${i}`, lexical: lexical(i), status: 'published' });
        }
      }),
    );
    console.log(`created ${posts} posts in ${Date.now() - t} ms`);
    const count = async () => (await api.posts.browse({ limit: 1, fields: 'id' })).meta.pagination.total as number;
    const before = await count();
    const siteDir = sites.siteDir(siteId);
    const bytes = await siteBytes(siteDir);
    console.log(`site on disk: database ${mib(bytes.database)}, content ${mib(bytes.content)} (${before} posts)`);

    // Capture while the site runs.
    t = Date.now();
    const db = database ? await backups.captureMysql(database) : await backups.captureDatabase(runtime.dir, siteDir);
    const dbMs = Date.now() - t;
    t = Date.now();
    const content = await backups.captureContent(siteDir);
    const contentMs = Date.now() - t;
    t = Date.now();
    await backups.captureRelease({
      name: 'ghost',
      version: GHOST.version,
      image: `npm:ghost@${GHOST.version}`,
      digest: GHOST.integrity,
    });
    const releaseMs = Date.now() - t;
    console.log(
      `capture: database ${dbMs} ms (${mib(db.sizeBytes)}), content ${contentMs} ms (${mib(content.sizeBytes)}), release ${releaseMs} ms; total ${dbMs + contentMs + releaseMs} ms`,
    );

    // Damage, then restore: stop (503), database and content back, start, first healthy answer.
    const all = await api.posts.browse({ limit: 50, fields: 'id' });
    for (const p of all) await api.posts.delete({ id: p.id });
    const damaged = await count();
    t = Date.now();
    await sites.stop(siteId);
    const stopMs = Date.now() - t;
    t = Date.now();
    if (database) await backups.restoreMysql(db, database, siteDir);
    else await backups.restoreDatabase(db, siteDir);
    await backups.restoreContent(content, siteDir);
    const dataMs = Date.now() - t;
    t = Date.now();
    ({ port } = await sites.start(site));
    const startMs = Date.now() - t;
    const after = await count();
    console.log(
      `restore: stop ${stopMs} ms, data back ${dataMs} ms, start to healthy ${startMs} ms; total ${stopMs + dataMs + startMs} ms (posts ${before} → ${damaged} → ${after})`,
    );
    if (after !== before) throw new Error(`restore lost posts: ${after} of ${before}`);
  } finally {
    await sup.removeAll();
    if (mysqlAdmin) await dropSiteDatabase(mysqlAdmin, siteId);
    await edge.close();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
