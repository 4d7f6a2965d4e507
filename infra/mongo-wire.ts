import fs from 'node:fs';
import path from 'node:path';
import { config } from '../core/config';
import { type EngineProcess, runningPid, startDetached, waitUntilReady } from './processes';
import {
  InfraError,
  LOCAL_HOST,
  dataDir,
  infraSource,
  isInstalled,
  markInstalled,
  mavenCopyDependencies,
  mavenRepo,
  portAnswers,
  progress,
  JAVA_PURPOSE,
  MAVEN_PURPOSE,
  requireJava,
  requireMaven,
  requireJavac,
  run,
  SHORT_JVM,
  seconds,
  sha256,
  shown,
  logsDir,
} from './tools';

/**
 * The local MongoDB-wire server: mongo-java-server 1.47 (memory and H2 backends) from Maven
 * Central, run by the small Java main infra/mongo-wire/src/MongoWireServer.java. Jars under
 * <DATA_DIR>/mongo-wire/lib, compiled main under <DATA_DIR>/mongo-wire/classes, H2 data in
 * <DATA_DIR>/mongo-wire/platform.mv, log in <DATA_DIR>/logs/mongo-wire.log.
 */
export const MONGO_JAVA_SERVER_VERSION = '1.47.0';
export const mongoWireEngine: EngineProcess = {
  name: 'mongo-wire',
  label: 'the MongoDB-wire server',
  marker: 'MongoWireServer',
};

export type MongoWireBackend = 'h2' | 'memory';
/** h2 persists to one file across restarts; memory keeps nothing (throwaway runs). */
export const DEFAULT_BACKEND: MongoWireBackend = 'h2';

const READY_TIMEOUT_MS = 120_000;

const mwDir = (...p: string[]) => dataDir('mongo-wire', ...p);
const libDir = () => mwDir('lib');
const classesDir = () => mwDir('classes');
export const h2File = () => mwDir('platform.mv');

/** The backend `MONGO_WIRE_BACKEND` asks for (h2 by default). */
export function mongoWireBackend(): MongoWireBackend {
  const b = (process.env.MONGO_WIRE_BACKEND ?? DEFAULT_BACKEND).trim().toLowerCase();
  if (b !== 'h2' && b !== 'memory') {
    throw new InfraError(`infra: MONGO_WIRE_BACKEND must be h2 or memory, not "${b}"`);
  }
  return b;
}

async function ensureInstalled(): Promise<void> {
  const pom = infraSource('mongo-wire', 'pom.xml');
  const stamp = `mongo-java-server ${sha256(fs.readFileSync(pom))}`;
  if (isInstalled(libDir(), stamp)) return;
  requireMaven(MAVEN_PURPOSE);
  const cached = fs.existsSync(path.join(mavenRepo(), 'de', 'bwaldvogel', 'mongo-java-server-core', MONGO_JAVA_SERVER_VERSION));
  progress(
    cached
      ? `installing mongo-java-server ${MONGO_JAVA_SERVER_VERSION} from the local Maven cache…`
      : `resolving mongo-java-server ${MONGO_JAVA_SERVER_VERSION} from Maven Central (first run only)…`,
  );
  const t0 = Date.now();
  fs.mkdirSync(mwDir(), { recursive: true });
  await mavenCopyDependencies(pom, libDir(), `resolving mongo-java-server ${MONGO_JAVA_SERVER_VERSION} with Maven`);
  markInstalled(libDir(), stamp);
  progress(`mongo-java-server ${MONGO_JAVA_SERVER_VERSION} installed in ${shown(libDir())} (${seconds(Date.now() - t0)})`);
}

/** Compiles MongoWireServer.java into <DATA_DIR>/mongo-wire/classes when the source (or the jars) changed. */
async function ensureCompiled(): Promise<void> {
  const src = infraSource('mongo-wire', 'src', 'MongoWireServer.java');
  const stamp = `MongoWireServer ${sha256(fs.readFileSync(src), fs.readFileSync(path.join(libDir(), '.installed')))}`;
  if (isInstalled(classesDir(), stamp) && fs.existsSync(path.join(classesDir(), 'MongoWireServer.class'))) return;
  const javac = requireJavac('compile the MongoDB-wire server (infra/mongo-wire/src/MongoWireServer.java)');
  progress('compiling the MongoDB-wire server main…');
  fs.rmSync(classesDir(), { recursive: true, force: true });
  fs.mkdirSync(classesDir(), { recursive: true });
  await run(
    javac,
    [...SHORT_JVM.map((f) => `-J${f}`), '-nowarn', '-d', classesDir(), '-cp', `${libDir()}${path.sep}*`, src],
    'compiling infra/mongo-wire/src/MongoWireServer.java',
    logsDir('mongo-wire-build.log'),
  );
  markInstalled(classesDir(), stamp);
}

const where = () => `${LOCAL_HOST}:${config().MONGODB_PORT}`;

/**
 * Whether the local server must be started: false when its port already answers (or another
 * `infra up` is starting it — then this waits for the port), true when nothing runs.
 */
export async function mongoWireNeedsStart(): Promise<boolean> {
  const c = config();
  const pid = runningPid(mongoWireEngine);
  if (await portAnswers(c.MONGODB_PORT)) {
    progress(`MongoDB-wire server already running on ${where()}${pid ? ` (pid ${pid})` : ''}`);
    return false;
  }
  if (pid !== undefined) {
    progress(`the MongoDB-wire server is starting (pid ${pid}); waiting for ${where()}…`);
    await waitUntilReady(mongoWireEngine, () => portAnswers(c.MONGODB_PORT), {
      timeoutMs: READY_TIMEOUT_MS,
      where: where(),
      exited: () => (runningPid(mongoWireEngine) === undefined ? 'exited' : undefined),
    });
    return false;
  }
  mongoWireBackend(); // a bad MONGO_WIRE_BACKEND fails before anything is installed
  return true;
}

/** The JVM arguments that run the server on `port` with `backend` (H2 data in `file`). */
export function mongoWireJavaArgs(port: number, backend: MongoWireBackend, file: string): string[] {
  return [
    '-Xmx1g',
    '-Djava.awt.headless=true',
    '-Dorg.slf4j.simpleLogger.showDateTime=true',
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
    // One line per client connection opened/closed is noise: keep warnings only from the handler.
    '-Dorg.slf4j.simpleLogger.log.de.bwaldvogel.mongo.wire.MongoWireProtocolHandler=warn',
    '-cp',
    `${classesDir()}${path.delimiter}${libDir()}${path.sep}*`,
    'MongoWireServer',
    '--host',
    LOCAL_HOST,
    '--port',
    String(port),
    '--backend',
    backend,
    '--file',
    file,
  ];
}

/** Downloads (first run only) and compiles (when the source changed) the server. */
export async function ensureMongoWireBuilt(): Promise<void> {
  await ensureInstalled();
  await ensureCompiled();
}

/** Installs (first run only), compiles (when the source changed) and starts the server, then waits for its port. */
export async function startMongoWire(): Promise<void> {
  const c = config();
  const backend = mongoWireBackend();
  const java = requireJava(JAVA_PURPOSE);
  await ensureInstalled(); // synchronous up to its Maven run: callers rely on the queue order
  await ensureCompiled();
  progress(
    `starting the MongoDB-wire server on ${where()} (${backend} backend${backend === 'h2' ? `, ${shown(h2File())}` : ', nothing kept'})…`,
  );
  const t0 = Date.now();
  const started = startDetached(
    mongoWireEngine,
    java,
    mongoWireJavaArgs(c.MONGODB_PORT, backend, h2File()),
    { backend, port: c.MONGODB_PORT, file: backend === 'h2' ? h2File() : null, version: MONGO_JAVA_SERVER_VERSION },
    mwDir(),
  );
  await waitUntilReady(mongoWireEngine, () => portAnswers(c.MONGODB_PORT), {
    timeoutMs: READY_TIMEOUT_MS,
    exited: started.exited,
    where: where(),
  });
  progress(`MongoDB-wire server ready in ${seconds(Date.now() - t0)} (pid ${started.pid})`);
}
