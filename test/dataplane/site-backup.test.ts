import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { contentDir, databaseFile } from '../../dataplane/runtimes/ghost';
import { RuntimeCache } from '../../dataplane/runtime-cache';
import { RECOVERY_POINT_REGION, SiteBackups, withDatabase } from '../../dataplane/site-backup';

/**
 * A recovery point's bytes (docs/decisions/0150-recovery-point-bytes.md) on a site directory laid
 * out as Ghost's, with the `sqlite3` module of the cached Ghost release (installed once into the
 * per-user runtime cache, as the real-site tests do).
 */
const GHOST = {
  name: 'ghost',
  version: '5.130.5',
  integrity: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
};

let runtimeDir: string;
let root: string;
let siteDir: string;
let backups: SiteBackups;
let store: FsBlobStore;
let sqlite: any;

beforeAll(async () => {
  runtimeDir = (await new RuntimeCache().ensure(GHOST)).dir;
  sqlite = createRequire(path.join(runtimeDir, 'package.json'))('sqlite3');
}, 45 * 60_000);

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'site-backup-'));
  siteDir = path.join(root, 'site');
  const content = contentDir(siteDir);
  for (const d of ['data', 'images', 'logs', 'themes']) mkdirSync(path.join(content, d), { recursive: true });
  writeFileSync(path.join(content, 'images', 'cover.png'), 'cover');
  writeFileSync(path.join(content, 'logs', 'site.log'), 'log line');
  symlinkSync(path.join(runtimeDir, 'content', 'themes', 'casper'), path.join(content, 'themes', 'casper'));
  store = new FsBlobStore(path.join(root, 'blobs'));
  backups = new SiteBackups(store);
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function open(file: string): Promise<any> {
  return new Promise((res, rej) => {
    const db = new sqlite.Database(file, (e: Error | null) => (e ? rej(e) : res(db)));
  });
}
const exec = (db: any, sql: string) => new Promise<void>((res, rej) => db.exec(sql, (e: Error | null) => (e ? rej(e) : res())));
const all = (db: any, sql: string) =>
  new Promise<any[]>((res, rej) => db.all(sql, (e: Error | null, rows: any[]) => (e ? rej(e) : res(rows))));
const close = (db: any) => new Promise<void>((res) => db.close(() => res()));

it('copies a database that is being written to as one committed state, and puts it back', async () => {
  const db = await open(databaseFile(siteDir));
  await exec(db, 'PRAGMA journal_mode = WAL; CREATE TABLE posts (n INTEGER, pair INTEGER)');
  // A writer commits pairs of rows, one transaction each, while the copy is taken.
  let writing = true;
  let pairs = 0;
  const writer = (async () => {
    while (writing) {
      await exec(db, `BEGIN; INSERT INTO posts VALUES (${pairs}, 1); INSERT INTO posts VALUES (${pairs}, 2); COMMIT;`);
      pairs++;
    }
  })();
  while (pairs < 50) await new Promise((r) => setTimeout(r, 5));
  const part = await backups.captureDatabase(runtimeDir, siteDir);
  writing = false;
  await writer;
  expect(part.sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(await store.stat(RECOVERY_POINT_REGION, part.sha256)).toBe(part.sizeBytes);

  const copied = path.join(root, 'copy.db');
  writeFileSync(
    copied,
    readFileSync(path.join(root, 'blobs', RECOVERY_POINT_REGION, 'blobs', part.sha256.slice(0, 2), part.sha256)),
  );
  const copy = await open(copied);
  expect(await all(copy, 'PRAGMA integrity_check')).toEqual([{ integrity_check: 'ok' }]);
  const [{ rows }] = await all(copy, 'SELECT COUNT(*) AS rows FROM posts');
  expect(rows % 2).toBe(0);
  expect(rows).toBeGreaterThanOrEqual(100);
  await close(copy);

  await exec(db, 'DELETE FROM posts');
  await close(db);
  await backups.restoreDatabase(part, siteDir);
  const restored = await open(databaseFile(siteDir));
  expect((await all(restored, 'SELECT COUNT(*) AS rows FROM posts'))[0].rows).toBe(rows);
  await close(restored);
  // withDatabase opens it the same way (a staging copy is rekeyed through it).
  expect(
    await withDatabase(runtimeDir, databaseFile(siteDir), (d) => d.get<{ n: number }>('SELECT COUNT(*) AS n FROM posts')),
  ).toEqual({
    n: rows,
  });
});

it('archives the content without the database and the logs, and restores it keeping the current database', async () => {
  const db = await open(databaseFile(siteDir));
  await exec(db, 'CREATE TABLE t (x); INSERT INTO t VALUES (1)');
  await close(db);
  const part = await backups.captureContent(siteDir);
  const content = contentDir(siteDir);
  writeFileSync(path.join(content, 'images', 'added-later.png'), 'later');
  rmSync(path.join(content, 'images', 'cover.png'));

  await backups.restoreContent(part, siteDir);
  expect(readFileSync(path.join(content, 'images', 'cover.png'), 'utf8')).toBe('cover');
  expect(existsSync(path.join(content, 'images', 'added-later.png'))).toBe(false);
  // Logs are not part of a point; the bundled theme stays a link to the release.
  expect(existsSync(path.join(content, 'logs', 'site.log'))).toBe(false);
  expect(existsSync(path.join(content, 'logs'))).toBe(true);
  expect(lstatSync(path.join(content, 'themes', 'casper')).isSymbolicLink()).toBe(true);
  expect(readlinkSync(path.join(content, 'themes', 'casper'))).toBe(path.join(runtimeDir, 'content', 'themes', 'casper'));
  // The database is not in the archive: the site's current one is kept.
  const after = await open(databaseFile(siteDir));
  expect(await all(after, 'SELECT x FROM t')).toEqual([{ x: 1 }]);
  await close(after);
});

it('refuses bytes that do not hash to the point, before replacing anything; a site without a database cannot be captured', async () => {
  const db = await open(databaseFile(siteDir));
  await exec(db, 'CREATE TABLE t (x); INSERT INTO t VALUES (7)');
  await close(db);
  const dbPart = await backups.captureDatabase(runtimeDir, siteDir);
  const contentPart = await backups.captureContent(siteDir);
  // The stored database blob is damaged.
  const blob = path.join(root, 'blobs', RECOVERY_POINT_REGION, 'blobs', dbPart.sha256.slice(0, 2), dbPart.sha256);
  const bytes = readFileSync(blob);
  bytes[bytes.length - 1] ^= 0xff;
  writeFileSync(blob, bytes);
  const db2 = await open(databaseFile(siteDir));
  await exec(db2, 'INSERT INTO t VALUES (8)');
  await close(db2);
  await expect(backups.restoreDatabase(dbPart, siteDir)).rejects.toMatchObject({ code: 'snapshot_corrupt' });
  await expect(backups.restoreContent({ ...contentPart, sha256: dbPart.sha256 }, siteDir)).rejects.toMatchObject({
    code: 'snapshot_corrupt',
  });
  const kept = await open(databaseFile(siteDir));
  expect(await all(kept, 'SELECT x FROM t ORDER BY x')).toEqual([{ x: 7 }, { x: 8 }]);
  await close(kept);
  expect(readFileSync(path.join(contentDir(siteDir), 'images', 'cover.png'), 'utf8')).toBe('cover');

  rmSync(databaseFile(siteDir));
  await expect(backups.captureDatabase(runtimeDir, siteDir)).rejects.toMatchObject({ code: 'capture_failed' });
});

it('seals the release manifest and reads it back checked', async () => {
  const manifest = { name: 'ghost', version: GHOST.version, image: `npm:ghost@${GHOST.version}`, digest: GHOST.integrity };
  const part = await backups.captureRelease(manifest);
  expect(await backups.readRelease(part)).toEqual(manifest);
  await expect(backups.readRelease({ ...part, sizeBytes: part.sizeBytes + 1 })).rejects.toMatchObject({
    code: 'snapshot_corrupt',
  });
});

it('never follows a link the site planted in its own directory (its uid owns it; the platform works there as root)', async () => {
  // A real database and a point of it first.
  const db = await open(databaseFile(siteDir));
  await exec(db, "CREATE TABLE posts (title TEXT); INSERT INTO posts VALUES ('kept');");
  await close(db);
  const point = await backups.captureDatabase(runtimeDir, siteDir);
  // Then the site replaces its data directory with a link to somewhere of the platform's.
  const elsewhere = path.join(root, 'platform-owned');
  mkdirSync(elsewhere);
  const data = path.dirname(databaseFile(siteDir));
  rmSync(data, { recursive: true, force: true });
  symlinkSync(elsewhere, data);
  await expect(backups.restoreDatabase(point, siteDir)).rejects.toMatchObject({
    code: 'restore_failed',
    message: /not a plain directory/,
  });
  await expect(backups.captureDatabase(runtimeDir, siteDir)).rejects.toMatchObject({ code: 'capture_failed' });
  expect(readdirSync(elsewhere)).toEqual([]);
  // A linked content directory, or a linked database file, too.
  rmSync(data);
  mkdirSync(data);
  symlinkSync(path.join(elsewhere, 'secret.db'), databaseFile(siteDir));
  await expect(backups.captureDatabase(runtimeDir, siteDir)).rejects.toMatchObject({ message: /not a plain file/ });
  const content = contentDir(siteDir);
  rmSync(content, { recursive: true, force: true });
  symlinkSync(elsewhere, content);
  await expect(backups.captureContent(siteDir)).rejects.toMatchObject({ code: 'capture_failed' });
  await expect(backups.restoreContent(point, siteDir)).rejects.toMatchObject({ code: 'restore_failed' });
  expect(readdirSync(elsewhere)).toEqual([]);
});
