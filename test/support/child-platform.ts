import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Connection } from 'mongoose';
import { loadConfig } from '../../core/config';
import { connectMongo, ensureIndexes } from '../../core/mongo';

/**
 * The harness of the kill tests: the built platform (`bin/platform.js start all`, from dist/) runs
 * as a child process so that a test can `kill -9` it mid-work and start it again. A crash can only
 * be tested out of process — `startTestPlatform()` shares the test's process and cannot die
 * without taking the assertions with it.
 *
 * One scope per test file: its own database (`t_<id>`) and topic prefix (`t<id>`), the same names
 * `startTestPlatform()` uses, so kill tests run beside the other suites without seeing their data.
 * Every child started from the scope shares them: a restart finds what the killed process left.
 */
const ROOT = path.join(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'platform.js');

export interface ChildPlatform {
  proc: ChildProcess;
  /** From the `REST bridge <url>` line the child prints once it listens. */
  bridgeUrl: string;
  /** From the `CDN <url>` line, when the child printed it together with the bridge's. */
  cdnUrl?: string;
  /** SIGKILL (no shutdown hooks run: the point of the test) and waits for the exit. */
  kill(): Promise<void>;
  /** Ends the child at clean-up; SIGKILL as well, since the database is dropped right after. */
  stop(): Promise<void>;
}

export interface ChildPlatformScope {
  /** The random id naming this scope's database and topic prefix. */
  id: string;
  /** The engines' MongoDB URI with the database replaced by `t_<id>`. */
  dbUri: string;
  /** `t<id>`: every topic the children create starts with it. */
  topicPrefix: string;
  /**
   * A connection to the scope's database, for seeding, keys and assertions on records. `indexes`
   * creates the unique indexes first (what the platform would do at start).
   */
  connect(opts?: { indexes?: boolean }): Promise<Connection>;
  /**
   * Starts `platform start all` on free ports (every port variable `0`) against the scope's
   * database and topics, with `env` added (leases, delays, blob dir…) and `LOG_LEVEL=silent`.
   * Resolves once the bridge address is printed; rejects if the child exits or `startTimeoutMs`
   * passes first (the child's stderr is in the message). The scope remembers the newest child.
   */
  start(opts?: { env?: Record<string, string>; startTimeoutMs?: number }): Promise<ChildPlatform>;
  /** For `afterAll`: kills the newest child, drops the database, closes the connection. */
  cleanup(): Promise<void>;
}

/** Fails fast with the fix when dist/ is missing: the child runs the built code, not ts-jest's. */
export function assertBuilt(): void {
  if (!existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('run `npm run build` first');
}

function kill9(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });
}

export function childPlatformScope(): ChildPlatformScope {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const dbUri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/t_${id}$1`);
  const topicPrefix = `t${id}`;
  let conn: Connection | undefined;
  let newest: ChildPlatform | undefined;

  const start = ({ env = {}, startTimeoutMs = 90_000 }: { env?: Record<string, string>; startTimeoutMs?: number } = {}) => {
    const proc = spawn(process.execPath, [BIN, 'start', 'all'], {
      env: {
        ...process.env,
        MONGODB_URI: dbUri,
        KAFKA_BROKERS: base.kafkaBrokers.join(','),
        KAFKA_TOPIC_PREFIX: topicPrefix,
        BRIDGE_PORT: '0',
        ROUTER_PORT: '0',
        CDN_PORT: '0',
        EDGE_PORT: '0',
        SUBGRAPH_BASE_PORT: '0',
        // As startTestPlatform: the simulated executor unless a test asks for real sites.
        PUBLISHER_EXECUTOR: 'simulated',
        ...env,
        LOG_LEVEL: 'silent',
      },
      // stderr carries the addresses (and the reason, if the start fails); stdout is not read.
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return new Promise<ChildPlatform>((resolve, reject) => {
      let err = '';
      const timer = setTimeout(() => reject(new Error(`platform did not start: ${err}`)), startTimeoutMs);
      proc.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /REST bridge\s+(http:\/\/\S+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          const kill = () => kill9(proc);
          newest = { proc, bridgeUrl: m[1], cdnUrl: /CDN\s+(http:\/\/\S+)/.exec(err)?.[1], kill, stop: kill };
          resolve(newest);
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`platform exited (${code}): ${err}`));
      });
    });
  };

  return {
    id,
    dbUri,
    topicPrefix,
    async connect({ indexes = false } = {}) {
      conn = await connectMongo(dbUri);
      if (indexes) await ensureIndexes(conn);
      return conn;
    },
    start,
    async cleanup() {
      if (newest) await newest.stop();
      if (conn) {
        await conn.dropDatabase().catch(() => undefined);
        await conn.close();
      }
    },
  };
}
