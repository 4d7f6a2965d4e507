import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import mysql from 'mysql2';
import mysqlp from 'mysql2/promise';

/**
 * A site's MySQL database (docs/decisions/0220-mysql-adapter.md): with `PUBLISHER_MYSQL_URL` (an
 * admin URL, `mysql://root:pw@host:3306/`) each site gets database `site_<id>` and a user of its own
 * with a random password, granted that database only; the site's process connects as that user.
 * A logical dump (one consistent snapshot, `START TRANSACTION WITH CONSISTENT SNAPSHOT`, as
 * `mysqldump --single-transaction` takes it) is what a recovery point seals; loading it replaces
 * every table of the database. Everything here goes through `mysql2`, the client Ghost itself uses.
 */

/** Where a site's database is and who the site connects as. */
export interface MysqlSiteDatabase {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
}

/** The admin server a `PUBLISHER_MYSQL_URL` names. */
export interface MysqlAdmin {
  host: string;
  port: number;
  user: string;
  password: string;
}

export function parseMysqlUrl(url: string): MysqlAdmin {
  const u = new URL(url);
  if (u.protocol !== 'mysql:') throw new Error(`PUBLISHER_MYSQL_URL must be a mysql:// URL, not ${u.protocol}`);
  return {
    host: u.hostname.replace(/^\[|\]$/g, ''),
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
  };
}

/** The database of a site: `site_<id>` (dashes become underscores; ≤ 64 characters). */
export const siteDatabaseName = (siteId: string) => `site_${siteId.replace(/[^A-Za-z0-9_]/g, '_')}`.slice(0, 64);
/** The user of a site: 32 characters at most (MySQL 8's limit), derived from the id. */
export const siteUserName = (siteId: string) => `site_${createHash('sha256').update(siteId).digest('hex').slice(0, 27)}`;

const q = (id: string) => mysql.escapeId(id);

async function admin<T>(a: MysqlAdmin, fn: (c: mysqlp.Connection) => Promise<T>): Promise<T> {
  const c = await mysqlp.createConnection({
    host: a.host,
    port: a.port,
    user: a.user,
    password: a.password,
    connectTimeout: 10_000,
  });
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => c.destroy());
  }
}

/**
 * Creates the site's database and user (the `allocate_database` step). `password` is the one sealed
 * for the site: running it again (a retried step) sets the same password, so it is idempotent.
 */
export async function allocateSiteDatabase(a: MysqlAdmin, siteId: string, password: string): Promise<MysqlSiteDatabase> {
  const database = siteDatabaseName(siteId);
  const user = siteUserName(siteId);
  await admin(a, async (c) => {
    await c.query(`CREATE DATABASE IF NOT EXISTS ${q(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`);
    await c.query(`CREATE USER IF NOT EXISTS ?@'%' IDENTIFIED BY ?`, [user, password]);
    await c.query(`ALTER USER ?@'%' IDENTIFIED BY ?`, [user, password]);
    await c.query(`GRANT ALL PRIVILEGES ON ${q(database)}.* TO ?@'%'`, [user]);
  });
  return { host: a.host, port: a.port, database, user, password };
}

/** Drops the site's database and user (the `delete_site` step); nothing left is fine. */
export async function dropSiteDatabase(a: MysqlAdmin, siteId: string): Promise<void> {
  await admin(a, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${q(siteDatabaseName(siteId))}`);
    await c.query(`DROP USER IF EXISTS ?@'%'`, [siteUserName(siteId)]);
  });
}

/** Whether the site's database and user exist (for tests and the operator). */
export async function siteDatabaseExists(a: MysqlAdmin, siteId: string): Promise<{ database: boolean; user: boolean }> {
  return admin(a, async (c) => {
    const [dbs] = await c.query<mysqlp.RowDataPacket[]>('SELECT 1 FROM information_schema.schemata WHERE schema_name = ?', [
      siteDatabaseName(siteId),
    ]);
    const [users] = await c.query<mysqlp.RowDataPacket[]>("SELECT 1 FROM mysql.user WHERE user = ? AND host = '%'", [
      siteUserName(siteId),
    ]);
    return { database: dbs.length > 0, user: users.length > 0 };
  });
}

/** A random password for a site's user. */
export const newDatabasePassword = () => randomBytes(24).toString('base64url');

/** The connection options of a site's own user (dates and big numbers kept as the server's text). */
function siteOptions(db: MysqlSiteDatabase, extra: mysql.ConnectionOptions = {}): mysql.ConnectionOptions {
  return {
    host: db.host,
    port: db.port,
    user: db.user,
    password: db.password,
    database: db.database,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z',
    charset: 'utf8mb4_general_ci',
    // JSON columns stay text (MySQL's JSON type, MariaDB's JSON-checked LONGTEXT): written back as the same string.
    jsonStrings: true,
    ...extra,
  };
}

/** A SQL session on a site's database (a staging copy's rekeying). */
export async function withSiteDatabase<T>(
  db: MysqlSiteDatabase,
  fn: (s: {
    run(sql: string, ...p: unknown[]): Promise<void>;
    get<R>(sql: string, ...p: unknown[]): Promise<R | undefined>;
  }) => Promise<T>,
): Promise<T> {
  const c = await mysqlp.createConnection(siteOptions(db));
  try {
    return await fn({
      run: async (sql, ...p) => {
        await c.query(sql, p);
      },
      get: async <R>(sql: string, ...p: unknown[]) => {
        const [rows] = await c.query<mysqlp.RowDataPacket[]>(sql, p);
        return rows[0] as R | undefined;
      },
    });
  } finally {
    await c.end().catch(() => c.destroy());
  }
}

const ROWS_PER_INSERT = 200;

/**
 * Writes a logical dump of the site's database to `out`: one SQL statement per line group, each
 * ending with `;` at the end of a line, loadable by `mysql` as well as by `loadDump`. All tables are
 * read inside one consistent snapshot (InnoDB, repeatable read), so the dump is one committed state
 * while the site keeps serving and writing.
 */
export async function dumpSiteDatabase(db: MysqlSiteDatabase, out: Writable): Promise<void> {
  const conn = mysql.createConnection(siteOptions(db));
  const c = conn.promise();
  // Waits for the consumer when it is full (`once` also rejects on its error, and cleans up).
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  try {
    await c.query("SET SESSION time_zone = '+00:00'");
    await c.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
    await c.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
    const [tables] = await c.query<mysqlp.RowDataPacket[]>(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY table_name",
    );
    await write("SET NAMES utf8mb4;\nSET time_zone = '+00:00';\nSET FOREIGN_KEY_CHECKS = 0;\nSET UNIQUE_CHECKS = 0;\n");
    for (const { t } of tables as { t: string }[]) {
      const [[create]] = await c.query<mysqlp.RowDataPacket[]>(`SHOW CREATE TABLE ${q(t)}`);
      await write(`DROP TABLE IF EXISTS ${q(t)};\n${String(create['Create Table'])};\n`);
      let batch: unknown[][] = [];
      const flush = async () => {
        if (batch.length === 0) return;
        const values = batch
          .map((r) => `(${r.map((v) => mysql.escape(v as Parameters<typeof mysql.escape>[0])).join(',')})`)
          .join(',\n');
        batch = [];
        await write(`INSERT INTO ${q(t)} VALUES\n${values};\n`);
      };
      const rows = conn.query({ sql: `SELECT * FROM ${q(t)}`, rowsAsArray: true }).stream({ highWaterMark: 500 });
      for await (const row of rows as AsyncIterable<unknown[]>) {
        batch.push(row);
        if (batch.length >= ROWS_PER_INSERT) await flush();
      }
      await flush();
    }
    await write('SET FOREIGN_KEY_CHECKS = 1;\nSET UNIQUE_CHECKS = 1;\n');
    await c.query('COMMIT');
  } finally {
    await c.end().catch(() => conn.destroy());
  }
}

/**
 * Replaces every table of the site's database with the dump's (the site is stopped): the tables
 * there now are dropped first (a migration may have added some since the point), then the dump's
 * statements run in order, several at a time.
 */
export async function loadSiteDatabase(db: MysqlSiteDatabase, dump: Readable): Promise<void> {
  const c = await mysqlp.createConnection(siteOptions(db, { multipleStatements: true }));
  try {
    const [tables] = await c.query<mysqlp.RowDataPacket[]>(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'",
    );
    await c.query('SET FOREIGN_KEY_CHECKS = 0');
    for (const { t } of tables as { t: string }[]) await c.query(`DROP TABLE IF EXISTS ${q(t)}`);
    let statement = '';
    let pending = '';
    for await (const line of createInterface({ input: dump, crlfDelay: Infinity })) {
      statement += `${line}\n`;
      if (!line.endsWith(';')) continue;
      pending += statement;
      statement = '';
      if (pending.length > 1_000_000) {
        await c.query(pending);
        pending = '';
      }
    }
    if (statement.trim()) throw new Error('the dump ends inside a statement');
    if (pending) await c.query(pending);
  } finally {
    await c.end().catch(() => c.destroy());
  }
}
