import fs from 'node:fs';
import path from 'node:path';
import { type EngineProcess, runningPid, startDetached, stopEngine, waitUntilReady, withLockFile } from './processes';
import { InfraError, LOCAL_HOST, dataDir, logsDir, portAnswers, progress, run, runDir, seconds } from './tools';
import { type DebianPackage, installDebianPackages } from './debian';

/**
 * The local MySQL-compatible stand-in (docs/decisions/0220-mysql-adapter.md): MariaDB 10.11 from the
 * Debian archive, the packages' files extracted without root (`dpkg-deb -x`) into
 * <DATA_DIR>/mariadb/base once and reused; its data directory is <DATA_DIR>/mariadb/data, its log
 * <DATA_DIR>/logs/mariadb.log. The .deb files are fetched from the pinned Debian mirror addresses and
 * checked against their SHA-256 before anything is extracted (no apt lists needed, so a fresh CI
 * machine can install it). `PUBLISHER_MYSQL_URL` points sites at it: `mysql://root@127.0.0.1:3307/`.
 */
export const MARIADB_VERSION = '10.11.19';
export const DEFAULT_MARIADB_PORT = 3307;
export const mariadbEngine: EngineProcess = { name: 'mariadb', label: 'MariaDB', marker: 'mariadbd' };

const SECURITY = 'https://deb.debian.org/debian-security/pool/updates/main/m/mariadb';
const MAIN = 'https://deb.debian.org/debian/pool/main';
/** The packages the server and its client library need beyond a Debian base image (bookworm, amd64). */
export const MARIADB_DEBS: DebianPackage[] = [
  {
    urls: [`${SECURITY}/mariadb-server-core_10.11.19-0%2bdeb12u1_amd64.deb`],
    sha256: 'bda81cb1c5b538e19eed27462fa8df577684b9cdc4fe40cee8d1da9cbc0fe76b',
  },
  {
    urls: [`${SECURITY}/mariadb-client-core_10.11.19-0%2bdeb12u1_amd64.deb`],
    sha256: '60549abde2ad55068610b2cae03af7d17a2cafb0993f16c8c2413bd1b5fe6f5f',
  },
  {
    urls: [`${SECURITY}/libmariadb3_10.11.19-0%2bdeb12u1_amd64.deb`],
    sha256: 'cfd599e218eb53c471014b40d180f2f7f9ca7debaacfbd271bc9e4f4cc6eec39',
  },
  {
    urls: [`${SECURITY}/mariadb-common_10.11.19-0%2bdeb12u1_all.deb`],
    sha256: '8312a5cee61770295c48999d24ef7bb53214599eeb28db6c8c43943176be6e5b',
  },
  {
    urls: [`${MAIN}/libu/liburing/liburing2_2.3-3_amd64.deb`],
    sha256: 'c23077e3640e6cb4b819c134b3f41d5cf21b3edac099654b1b4142c3069a39a3',
  },
  {
    urls: [`${MAIN}/liba/libaio/libaio1_0.3.113-4_amd64.deb`],
    sha256: 'd1476e4beab3d85f8a7d31de94c27472711ed3ef399ce70708e24b259426125b',
  },
];

const baseDir = (...p: string[]) => dataDir('mariadb', 'base', ...p);
const dataDirOf = () => dataDir('mariadb', 'data');
const socketFile = () => runDir('mariadb.sock');
const libPath = () => baseDir('usr', 'lib', 'x86_64-linux-gnu');

/** The port the stand-in listens on (`MARIADB_PORT`, 3307 by default: 3306 is left to a real MySQL). */
export function mariadbPort(): number {
  const p = Number(process.env.MARIADB_PORT ?? DEFAULT_MARIADB_PORT);
  if (!Number.isInteger(p) || p <= 0 || p > 65535)
    throw new InfraError(`infra: MARIADB_PORT must be a port, not "${process.env.MARIADB_PORT}"`);
  return p;
}

/** The admin URL of the local stand-in, as `PUBLISHER_MYSQL_URL` takes it. */
export const mariadbUrl = (port = mariadbPort()) => `mysql://root@${LOCAL_HOST}:${port}/`;

/** Downloads, verifies and extracts the packages into <DATA_DIR>/mariadb/base, once. */
export function ensureMariadbInstalled(): Promise<{ installed: boolean; ms: number }> {
  return installDebianPackages({
    name: 'mariadb',
    label: 'MariaDB',
    version: MARIADB_VERSION,
    dir: baseDir(),
    debs: MARIADB_DEBS,
  });
}

const env = () => ({ ...process.env, LD_LIBRARY_PATH: [libPath(), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') });

async function ensureDataDir(): Promise<void> {
  if (fs.existsSync(path.join(dataDirOf(), 'mysql'))) return;
  const tmp = `${dataDirOf()}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  await run(
    baseDir('usr', 'bin', 'mariadb-install-db'),
    [
      '--no-defaults',
      `--basedir=${baseDir('usr')}`,
      `--datadir=${tmp}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
    ],
    'initialising the MariaDB data directory',
    logsDir('mariadb-install.log'),
    env(),
  ).catch(async (e: Error) => {
    // Older layouts keep the script under scripts/; retry there before giving up.
    const alt = baseDir('usr', 'share', 'mariadb', 'scripts', 'mariadb-install-db');
    if (!fs.existsSync(alt)) throw e;
    await run(
      alt,
      ['--no-defaults', `--basedir=${baseDir('usr')}`, `--datadir=${tmp}`],
      'initialising MariaDB',
      logsDir('mariadb-install.log'),
      env(),
    );
  });
  fs.rmSync(dataDirOf(), { recursive: true, force: true });
  fs.renameSync(tmp, dataDirOf());
}

/**
 * Brings the stand-in up (installing it on first use) unless it already answers on its port, and
 * answers its admin URL. Two callers at once start it once (a lock file under <DATA_DIR>/run).
 */
export async function mariadbUp(): Promise<{ url: string; started: boolean; installMs: number; startMs: number }> {
  const port = mariadbPort();
  return withLockFile(runDir('mariadb-up.lock'), 'another MariaDB start', 300_000, async () => {
    if (await portAnswers(port)) return { url: mariadbUrl(port), started: false, installMs: 0, startMs: 0 };
    const inst = await ensureMariadbInstalled();
    const t0 = Date.now();
    await ensureDataDir();
    // `env` gives the server the extracted libraries (it execs mariadbd, so the pid is the server's).
    const started = startDetached(
      mariadbEngine,
      'env',
      [
        `LD_LIBRARY_PATH=${env().LD_LIBRARY_PATH}`,
        baseDir('usr', 'sbin', 'mariadbd'),
        '--no-defaults',
        `--basedir=${baseDir('usr')}`,
        `--datadir=${dataDirOf()}`,
        `--port=${port}`,
        `--bind-address=${LOCAL_HOST}`,
        `--socket=${socketFile()}`,
        `--pid-file=${runDir('mariadbd.pid')}`,
        `--lc-messages-dir=${baseDir('usr', 'share', 'mariadb')}`,
        '--skip-name-resolve',
        // As root (a container), the server refuses to start unless told to stay root.
        ...(process.getuid?.() === 0 ? ['--user=root'] : []),
        '--innodb-buffer-pool-size=64M',
        '--innodb-log-file-size=16M',
        '--max-connections=300',
        '--character-set-server=utf8mb4',
        '--collation-server=utf8mb4_general_ci',
      ],
      { port },
      dataDirOf(),
    );
    await waitUntilReady(mariadbEngine, () => portAnswers(port), {
      timeoutMs: 60_000,
      exited: started.exited,
      where: `${LOCAL_HOST}:${port}`,
    });
    progress(`MariaDB up on ${LOCAL_HOST}:${port} (${seconds(Date.now() - t0)})`);
    return { url: mariadbUrl(port), started: true, installMs: inst.ms, startMs: Date.now() - t0 };
  });
}

/** Stops the stand-in that `mariadbUp` started. */
export function mariadbDown(): Promise<'stopped' | 'killed' | 'not-running'> {
  return stopEngine(mariadbEngine);
}

/** Whether the stand-in this data directory started is running. */
export const mariadbRunning = () => runningPid(mariadbEngine) !== undefined;
