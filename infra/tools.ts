import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { config } from '../core/config';
import { projectRoot } from '../core/paths';

/**
 * Small helpers shared by the engines: where things live, progress lines, tool checks, Maven runs,
 * TCP probes. Every failure the user can fix is thrown as an `InfraError` whose message is one clear
 * sentence (the CLI prints `err.message` only).
 */
export class InfraError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InfraError';
  }
}

/** The loopback address the local engines bind to. */
export const LOCAL_HOST = '127.0.0.1';

/** Where an infra source file of the project lives (poms, the Java main). */
export function infraSource(...parts: string[]): string {
  return path.join(projectRoot(), 'infra', ...parts);
}

/** `<DATA_DIR>` as an absolute path; a relative DATA_DIR is taken from the project root. */
export function dataDir(...parts: string[]): string {
  return path.resolve(projectRoot(), config().DATA_DIR, ...parts);
}
export const logsDir = (...parts: string[]) => dataDir('logs', ...parts);
export const runDir = (...parts: string[]) => dataDir('run', ...parts);

/** Relative to the current directory when that is shorter, for messages. */
export function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && rel.length < p.length ? rel : p;
}

let quiet = false;
export function setQuiet(q: boolean): void {
  quiet = q;
}
/** One progress line on stderr (`infra: …`), unless quiet. */
export function progress(message: string): void {
  if (!quiet) process.stderr.write(`infra: ${message}\n`);
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function sha256(...contents: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const c of contents) h.update(c);
  return h.digest('hex');
}

/** True when a TCP connection to host:port succeeds within timeoutMs. */
export function portAnswers(port: number, host = LOCAL_HOST, timeoutMs = 700): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean) => {
      socket.removeAllListeners();
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The last lines of a text file ('' when unreadable), for error messages. */
export function tail(file: string, lines = 15): string {
  try {
    const stat = fs.statSync(file);
    const size = Math.min(stat.size, 64 * 1024);
    const fd = fs.openSync(file, 'r');
    try {
      const buf = Buffer.alloc(size);
      fs.readSync(fd, buf, 0, size, stat.size - size);
      return buf.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// Tools

/** JVM flags for short-lived tools (Maven, javac, the storage formatter): about half the CPU to start. */
export const SHORT_JVM = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'];

/** What Java is for, in the one sentence a missing or old Java gets. */
export const JAVA_PURPOSE = 'run Kafka and the MongoDB-wire server';

/** What Maven is for, in the one sentence a missing Maven gets. */
export const MAVEN_PURPOSE = 'download Kafka and the MongoDB-wire server from Maven Central';

const JDK_HINT = 'install a JDK (Debian: apt-get install openjdk-17-jdk-headless)';

function javaHomeBin(tool: string): string | undefined {
  const home = process.env.JAVA_HOME;
  if (!home) return undefined;
  const p = path.join(home, 'bin', tool);
  return fs.existsSync(p) ? p : undefined;
}

const checked = new Map<string, string>();

/** The `java` to run (JAVA_HOME first, then PATH), checked to be Java 17 or newer. */
export function requireJava(purpose: string): string {
  const key = 'java';
  const hit = checked.get(key);
  if (hit) return hit;
  const java = javaHomeBin('java') ?? 'java';
  const r = spawnSync(java, ['-version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new InfraError(`infra: Java 17+ is needed to ${purpose}; ${JDK_HINT}`);
  }
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${r.stderr}${r.stdout}`);
  const major = m ? (m[1] === '1' ? Number(m[2]) : Number(m[1])) : 0;
  if (major < 17) {
    throw new InfraError(
      `infra: Java 17+ is needed to ${purpose}, but \`${java}\` is Java ${major || 'of unknown version'}; ${JDK_HINT}`,
    );
  }
  checked.set(key, java);
  return java;
}

/** The `javac` to run (JAVA_HOME first, then PATH). */
export function requireJavac(purpose: string): string {
  const hit = checked.get('javac');
  if (hit) return hit;
  const javac = javaHomeBin('javac') ?? 'javac';
  const r = spawnSync(javac, ['-version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new InfraError(`infra: a JDK 17+ compiler (javac) is needed to ${purpose}; ${JDK_HINT}`);
  }
  checked.set('javac', javac);
  return javac;
}

/** The `mvn` to run. */
export function requireMaven(purpose: string): string {
  const hit = checked.get('mvn');
  if (hit) return hit;
  const r = spawnSync('mvn', ['-v'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) {
    throw new InfraError(`infra: Maven 3.6+ is needed to ${purpose}; install it (Debian: apt-get install maven)`);
  }
  checked.set('mvn', 'mvn');
  return 'mvn';
}

/** Maven's local repository (the download cache): -Dmaven.repo.local in MAVEN_OPTS, else ~/.m2/repository. */
export function mavenRepo(): string {
  const m = /-Dmaven\.repo\.local=(\S+)/.exec(process.env.MAVEN_OPTS ?? '');
  return m ? path.resolve(m[1]) : path.join(os.homedir(), '.m2', 'repository');
}

/**
 * Runs a command to completion, its output appended to `logFile`; a non-zero exit throws an
 * InfraError naming `what`, with the last lines of its output.
 */
export function run(cmd: string, args: string[], what: string, logFile: string, env?: NodeJS.ProcessEnv): Promise<string> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  fs.appendFileSync(logFile, `\n$ ${cmd} ${args.join(' ')}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const collect = (b: Buffer) => {
      out += b.toString('utf8');
      fs.appendFileSync(logFile, b);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', (e) => reject(new InfraError(`infra: could not run ${cmd} (${what}): ${e.message}`)));
    child.once('close', (code) => {
      if (code === 0) return resolve(out);
      const last = out.trimEnd().split('\n').slice(-12).join('\n');
      reject(new InfraError(`infra: ${what} failed (exit ${code}); see ${shown(logFile)}${last ? `:\n${last}` : ''}`));
    });
  });
}

let mavenQueue: Promise<unknown> = Promise.resolve();
/**
 * Copies the runtime dependencies of `pom` into `outDir` with Maven (~/.m2 as the download cache).
 * Maven runs one at a time: its local repository is not safe for concurrent writers.
 */
export function mavenCopyDependencies(pom: string, outDir: string, what: string): Promise<void> {
  const mvn = requireMaven(MAVEN_PURPOSE);
  const job = mavenQueue.then(async () => {
    const tmp = `${outDir}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    await run(
      mvn,
      [
        '-q',
        '-B',
        '-Dstyle.color=never',
        '-f',
        pom,
        'dependency:copy-dependencies',
        '-DincludeScope=runtime',
        `-DoutputDirectory=${tmp}`,
      ],
      what,
      logsDir('maven.log'),
      { ...process.env, MAVEN_OPTS: [process.env.MAVEN_OPTS, ...SHORT_JVM].filter(Boolean).join(' ') },
    );
    fs.rmSync(outDir, { recursive: true, force: true });
    fs.renameSync(tmp, outDir);
  });
  mavenQueue = job.catch(() => undefined);
  return job;
}

/** True when `dir/.installed` records `stamp` (what was installed there and from which inputs). */
export function isInstalled(dir: string, stamp: string): boolean {
  try {
    return fs.readFileSync(path.join(dir, '.installed'), 'utf8').trim() === stamp;
  } catch {
    return false;
  }
}
export function markInstalled(dir: string, stamp: string): void {
  fs.writeFileSync(path.join(dir, '.installed'), `${stamp}\n`);
}
