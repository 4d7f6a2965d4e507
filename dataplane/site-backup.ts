import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../core/blobs/blob-store';
import { type DriverLayout, notPlain } from './runtimes/driver';
import { ghostDriver } from './runtimes/ghost';
import { dumpSiteDatabase, loadSiteDatabase, type MysqlSiteDatabase } from './site-database';

/**
 * The bytes of a site's recovery points (docs/decisions/0150-recovery-point-bytes.md): a consistent
 * copy of its SQLite database (SQLite's online backup API, while the site runs), a tar archive of
 * its content directory without the database and logs, and a manifest of its pinned release, each
 * stored through the kernel's blob store (filesystem by default, S3 in production) under its SHA-256.
 * Restoring checks every byte against the recorded hash before anything of the site is replaced.
 * Where the site's database and content are is its runtime driver's `layout` (dataplane/runtimes/);
 * the node agent runs these for the hosted node (docs/decisions/0360-data-steps-on-the-node.md).
 */

/** A site's files on a node: its directory (scratch files go there) and its driver's layout of it. */
export interface SiteFiles {
  dir: string;
  layout: DriverLayout;
}

/**
 * A site's files from its driver's layout, or from a bare directory laid out as the default
 * runtime's (Ghost's), for callers that build one by hand (the recovery bench, the unit test).
 */
export function siteFiles(site: string | SiteFiles): SiteFiles {
  return typeof site === 'string' ? { dir: site, layout: ghostDriver.layout(site) } : site;
}

/** The database file of a site's layout; a runtime without one has nothing to capture or restore this way. */
function databaseOf(f: SiteFiles, code: 'capture_failed' | 'restore_failed'): string {
  if (!f.layout.database) throw new BackupError(code, "the site's runtime keeps no database file");
  return f.layout.database;
}

/** One sealed part of a recovery point: where its bytes are (content address) and how many there are. */
export interface SealedPart {
  sha256: string;
  sizeBytes: number;
}

/** What a point records of the release it pins. */
export interface ReleaseManifest {
  name: string;
  version: string;
  image: string;
  digest: string;
}

/** The blob-store region that holds recovery points. */
export const RECOVERY_POINT_REGION = 'recovery-points';

/** Database files SQLite may keep beside the main one; none of them belongs in the content archive. */
const DB_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

export class BackupError extends Error {
  constructor(
    readonly code: 'capture_failed' | 'restore_failed' | 'snapshot_corrupt',
    message: string,
  ) {
    super(message);
    this.name = 'BackupError';
  }
}

interface SqliteBackup {
  step(pages: number, cb: (err: Error | null) => void): void;
  finish(cb?: (err: Error | null) => void): void;
  readonly completed: boolean;
  readonly failed: boolean;
}
interface SqliteDatabase {
  backup(filename: string, cb?: (err: Error | null) => void): SqliteBackup;
  run(sql: string, params: unknown[], cb: (err: Error | null) => void): void;
  get(sql: string, params: unknown[], cb: (err: Error | null, row: unknown) => void): void;
  close(cb: (err: Error | null) => void): void;
}
interface SqliteModule {
  Database: new (file: string, mode: number, cb: (err: Error | null) => void) => SqliteDatabase;
  OPEN_READONLY: number;
  OPEN_READWRITE: number;
}

/** The `sqlite3` module the release was installed with (built against this Node by the runtime cache). */
function loadSqlite(runtimeDir: string): SqliteModule {
  return createRequire(path.join(runtimeDir, 'package.json'))('sqlite3') as SqliteModule;
}

function openDb(sqlite: SqliteModule, file: string, mode: number): Promise<SqliteDatabase> {
  return new Promise((resolve, reject) => {
    const db = new sqlite.Database(file, mode, (e) => (e ? reject(e) : resolve(db)));
  });
}

const closeDb = (db: SqliteDatabase) => new Promise<void>((res, rej) => db.close((e) => (e ? rej(e) : res())));

/**
 * A SQL session on a site's database file while the site is stopped (a staging copy's rekeying):
 * `run` and `get` with bound parameters.
 */
export async function withDatabase<T>(
  runtimeDir: string,
  file: string,
  fn: (db: {
    run(sql: string, ...p: unknown[]): Promise<void>;
    get<R>(sql: string, ...p: unknown[]): Promise<R | undefined>;
  }) => Promise<T>,
): Promise<T> {
  const sqlite = loadSqlite(runtimeDir);
  const db = await openDb(sqlite, file, sqlite.OPEN_READWRITE);
  try {
    return await fn({
      run: (sql, ...p) => new Promise((res, rej) => db.run(sql, p, (e) => (e ? rej(e) : res()))),
      get: <R>(sql: string, ...p: unknown[]) =>
        new Promise<R | undefined>((res, rej) => db.get(sql, p, (e, row) => (e ? rej(e) : res(row as R | undefined)))),
    });
  } finally {
    await closeDb(db);
  }
}

/** Passes bytes through, hashing them: `check()` throws when they are not the expected blob. */
class Verifier extends Transform {
  private readonly hash = createHash('sha256');
  private size = 0;
  constructor(private readonly expected: SealedPart) {
    super();
  }
  override _transform(chunk: Buffer, _e: BufferEncoding, done: (e?: Error | null, d?: Buffer) => void): void {
    this.hash.update(chunk);
    this.size += chunk.length;
    done(null, chunk);
  }
  check(): void {
    const sha = this.hash.digest('hex');
    if (sha !== this.expected.sha256 || this.size !== this.expected.sizeBytes)
      throw new BackupError(
        'snapshot_corrupt',
        `stored bytes do not match the recovery point (sha256 ${sha}, ${this.size} bytes; expected ${this.expected.sha256}, ${this.expected.sizeBytes})`,
      );
  }
}

/** Runs `tar` with the given arguments; stdin/stdout are the streams given. */
function tar(args: string[], io: { stdin?: Readable; stdout?: NodeJS.WritableStream }): Promise<void> {
  const child = spawn('tar', args, { stdio: [io.stdin ? 'pipe' : 'ignore', io.stdout ? 'pipe' : 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (err = (err + c).slice(-2000)));
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tar ${args[0]} exited ${code}: ${err.trim()}`))));
  });
  const piping: Promise<void>[] = [];
  if (io.stdin) piping.push(pipeline(io.stdin, child.stdin!));
  if (io.stdout) piping.push(pipeline(child.stdout!, io.stdout));
  return Promise.all([exited, ...piping]).then(() => undefined);
}

/**
 * Refuses a site directory whose content, data directory or database is a link (or anything but a
 * directory or file): the site's own uid owns these paths (docs/decisions/0273-tenant-sandbox.md) and
 * the platform works on them as root, so a link planted there would have the platform read or write
 * outside the site. Checked before every capture and restore (a restore runs on a stopped site).
 */
export async function refuseLinks(site: string | SiteFiles, code: 'capture_failed' | 'restore_failed'): Promise<void> {
  const { dir, layout } = siteFiles(site);
  const db = layout.database;
  const odd = await notPlain(dir, [
    [layout.content, 'dir'],
    ...(db
      ? ([
          [path.dirname(db), 'dir'],
          [db, 'file'],
        ] as const)
      : []),
  ]);
  if (odd) throw new BackupError(code, `${odd.rel} in the site's directory is not a plain ${odd.what}; refusing to follow it`);
}

/**
 * Where a recovery point's parts go and come from (docs/decisions/0375-recovery-parts-over-the-agent-api.md):
 * the platform's blob store (`blobRecoveryParts`), or the agent API's part calls for a task the node
 * holds (dataplane/agent/recovery-parts.ts). A read answers the stored bytes, not yet checked (the
 * caller checks them against the part); a put answers the part the bytes became.
 */
export interface RecoveryParts {
  read(part: SealedPart): Promise<Readable>;
  put(source: Readable): Promise<SealedPart>;
}

/** The parts in a blob store's region (the platform's own: `PUBLISHER_BACKUP_STORE`). */
export function blobRecoveryParts(store: BlobStore, region = RECOVERY_POINT_REGION): RecoveryParts {
  return {
    read: async (part) => store.read(region, part.sha256),
    async put(source) {
      const staged = await store.stage(source);
      try {
        await store.commit(staged, region);
      } catch (e) {
        await store.discard(staged);
        throw e;
      }
      return { sha256: staged.sha256, sizeBytes: staged.size };
    },
  };
}

export class SiteBackups {
  private readonly parts: RecoveryParts;
  constructor(store: BlobStore | RecoveryParts) {
    this.parts = 'stage' in store ? blobRecoveryParts(store) : store;
  }

  /**
   * A consistent copy of the site's database, taken while it runs: SQLite's online backup copies
   * every page in one step under a read transaction, so the copy is one committed state of the
   * database (writers wait; a WAL reader would not even block them).
   */
  async captureDatabase(runtimeDir: string, site: string | SiteFiles): Promise<SealedPart> {
    const f = siteFiles(site);
    const source = databaseOf(f, 'capture_failed');
    await refuseLinks(f, 'capture_failed');
    if (!existsSync(source)) throw new BackupError('capture_failed', 'the site has no database yet');
    const tmp = path.join(f.dir, `.backup-${randomBytes(6).toString('hex')}.db`);
    const sqlite = loadSqlite(runtimeDir);
    try {
      const db = await openDb(sqlite, source, sqlite.OPEN_READONLY);
      try {
        await new Promise<void>((resolve, reject) => {
          const backup = db.backup(tmp, (e) => {
            if (e) return reject(e);
            backup.step(-1, (err) => {
              if (err) return reject(err);
              if (!backup.completed) return reject(new Error('the online backup did not complete'));
              backup.finish((fe) => (fe ? reject(fe) : resolve()));
            });
          });
        });
      } finally {
        await closeDb(db);
      }
      return await this.put(createReadStream(tmp));
    } catch (e) {
      if (e instanceof BackupError) throw e;
      throw new BackupError('capture_failed', `database backup failed: ${(e as Error).message}`);
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /**
   * A logical dump of a site's MySQL database (docs/decisions/0220-mysql-adapter.md), taken in one
   * consistent snapshot while the site runs, streamed into the store.
   */
  async captureMysql(db: MysqlSiteDatabase): Promise<SealedPart> {
    const out = new Transform({ transform: (c, _e, done) => done(null, c) });
    try {
      const [part] = await Promise.all([
        this.put(out),
        dumpSiteDatabase(db, out).then(
          () => out.end(),
          (e: Error) => {
            out.destroy(e);
            throw e;
          },
        ),
      ]);
      return part;
    } catch (e) {
      if (e instanceof BackupError) throw e;
      throw new BackupError('capture_failed', `database dump failed: ${(e as Error).message}`);
    }
  }

  /**
   * Replaces the (stopped) site's MySQL tables with the point's dump: fetched and checked whole
   * before anything is dropped, then loaded.
   */
  async restoreMysql(part: SealedPart, db: MysqlSiteDatabase, site: string | SiteFiles): Promise<void> {
    const { dir } = siteFiles(site);
    await mkdir(dir, { recursive: true });
    const tmp = path.join(dir, `.restore-${randomBytes(6).toString('hex')}.sql`);
    try {
      const v = new Verifier(part);
      await pipeline(await this.read(part), v, createWriteStream(tmp, { flags: 'wx' }));
      v.check();
      const head = await readHead(tmp);
      if (head.startsWith('SQLite format 3'))
        throw new BackupError('restore_failed', 'the recovery point holds a SQLite database; this site uses MySQL');
      await loadSiteDatabase(db, createReadStream(tmp));
    } catch (e) {
      if (e instanceof BackupError) throw e;
      throw new BackupError('restore_failed', `database restore failed: ${(e as Error).message}`);
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /**
   * A tar archive of the content directory (images, files, media, settings, themes the site
   * uploaded, and links to the release's bundled themes), without the database and the logs.
   */
  async captureContent(site: string | SiteFiles): Promise<SealedPart> {
    const f = siteFiles(site);
    const content = f.layout.content;
    await refuseLinks(f, 'capture_failed');
    if (!existsSync(content)) throw new BackupError('capture_failed', 'the site has no content directory yet');
    const db = f.layout.database ? path.relative(content, f.layout.database) : null;
    const excludes = [
      ...(db ? DB_SIDE_FILES.map((s) => `--exclude=./${db}${s}`) : []),
      ...(f.layout.transient ?? []).map((t) => `--exclude=./${t}/*`),
    ];
    const out = new Transform({ transform: (c, _e, done) => done(null, c) });
    try {
      const [part] = await Promise.all([
        this.put(out),
        tar(['-c', '-f', '-', '--format=posix', '--sort=name', ...excludes, '-C', content, '.'], { stdout: out }),
      ]);
      return part;
    } catch (e) {
      out.destroy();
      if (e instanceof BackupError) throw e;
      throw new BackupError('capture_failed', `content archive failed: ${(e as Error).message}`);
    }
  }

  /** The pinned release as a small manifest (name, version, image, registry digest). */
  captureRelease(release: ReleaseManifest): Promise<SealedPart> {
    return this.put(Readable.from([Buffer.from(JSON.stringify(release))]));
  }

  /** The release manifest a point sealed, checked against its hash. */
  async readRelease(part: SealedPart): Promise<ReleaseManifest> {
    const chunks: Buffer[] = [];
    const v = new Verifier(part);
    for await (const c of (await this.read(part)).pipe(v)) chunks.push(c as Buffer);
    v.check();
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as ReleaseManifest;
  }

  /**
   * Replaces the (stopped) site's database with the point's copy: written beside it, checked, then
   * renamed over it; the old file's WAL and shared-memory files go (they belong to the old file).
   */
  async restoreDatabase(part: SealedPart, site: string | SiteFiles): Promise<void> {
    const f = siteFiles(site);
    const target = databaseOf(f, 'restore_failed');
    await refuseLinks(f, 'restore_failed');
    await mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.restore-${randomBytes(6).toString('hex')}`;
    try {
      const v = new Verifier(part);
      await pipeline(await this.read(part), v, createWriteStream(tmp, { flags: 'wx' }));
      v.check();
      for (const s of DB_SIDE_FILES.slice(1)) await rm(`${target}${s}`, { force: true });
      await rename(tmp, target);
    } catch (e) {
      await rm(tmp, { force: true });
      if (e instanceof BackupError) throw e;
      throw new BackupError('restore_failed', `database restore failed: ${(e as Error).message}`);
    }
  }

  /**
   * Replaces the (stopped) site's content directory with the point's archive: fetched and checked,
   * unpacked beside it, the current database files moved in, then swapped in by rename. Whichever of database
   * and content is restored first, the other is kept.
   */
  async restoreContent(part: SealedPart, site: string | SiteFiles): Promise<void> {
    const f = siteFiles(site);
    const content = f.layout.content;
    await refuseLinks(f, 'restore_failed');
    const suffix = randomBytes(6).toString('hex');
    const fresh = `${content}.restore-${suffix}`;
    const old = `${content}.old-${suffix}`;
    const archive = `${content}.restore-${suffix}.tar`;
    await mkdir(fresh, { recursive: true });
    try {
      // The archive is fetched and checked whole before it is unpacked.
      const v = new Verifier(part);
      await pipeline(await this.read(part), v, createWriteStream(archive, { flags: 'wx' }));
      v.check();
      await tar(['-x', '-f', archive, '-C', fresh], {});
      for (const t of f.layout.transient ?? []) await mkdir(path.join(fresh, t), { recursive: true });
      // The database kept inside the content directory moves into the fresh one.
      const db = f.layout.database;
      const rel = db ? path.relative(content, db) : '..';
      if (db && !rel.startsWith('..')) {
        const freshDb = path.join(fresh, rel);
        await mkdir(path.dirname(freshDb), { recursive: true });
        for (const s of DB_SIDE_FILES) if (existsSync(`${db}${s}`)) await rename(`${db}${s}`, `${freshDb}${s}`);
      }
      if (existsSync(content)) await rename(content, old);
      await rename(fresh, content);
      await rm(old, { recursive: true, force: true });
    } catch (e) {
      await rm(fresh, { recursive: true, force: true });
      if (e instanceof BackupError) throw e;
      throw new BackupError('restore_failed', `content restore failed: ${(e as Error).message}`);
    } finally {
      await rm(archive, { force: true });
    }
  }

  private read(part: SealedPart): Promise<Readable> {
    return this.parts.read(part);
  }

  private put(source: Readable): Promise<SealedPart> {
    return this.parts.put(source);
  }
}

async function readHead(file: string): Promise<string> {
  for await (const c of createReadStream(file, { start: 0, end: 15 })) return (c as Buffer).toString('latin1');
  return '';
}

/** Sizes of what a site keeps on disk (database and content), for figures. */
export async function siteBytes(site: string | SiteFiles): Promise<{ database: number; content: number }> {
  const { layout } = siteFiles(site);
  const walk = async (dir: string): Promise<number> => {
    let n = 0;
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) n += await walk(p);
      else if (e.isFile()) n += (await stat(p)).size;
    }
    return n;
  };
  const db = layout.database
    ? await stat(layout.database).then(
        (s) => s.size,
        () => 0,
      )
    : 0;
  return { database: db, content: (await walk(layout.content)) - db };
}
