import fs from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { config } from '../core/config';
import { type EngineProcess, logFile, runningPid, startDetached, waitUntilReady } from './processes';
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
  SHORT_JVM,
  logsDir,
  run,
  seconds,
  sha256,
  shown,
} from './tools';

/**
 * The local Kafka broker: Apache Kafka 3.9.1 from Maven Central, one combined KRaft node
 * (broker + controller) on 127.0.0.1, jars under <DATA_DIR>/kafka/lib, data under
 * <DATA_DIR>/kafka/data, log in <DATA_DIR>/logs/kafka.log.
 */
export const KAFKA_VERSION = '3.9.1';
export const kafkaEngine: EngineProcess = { name: 'kafka', label: 'Kafka', marker: 'kafka.Kafka' };

const READY_TIMEOUT_MS = 120_000;

const kafkaDir = (...p: string[]) => dataDir('kafka', ...p);
const libDir = () => kafkaDir('lib');
export const classpath = () => `${libDir()}${path.sep}*`;

/** Puts the broker's runtime jars under <DATA_DIR>/kafka/lib (first run only, or when the pom changed). */
export async function ensureInstalled(): Promise<void> {
  const pom = infraSource('kafka', 'pom.xml');
  const stamp = `kafka ${KAFKA_VERSION} ${sha256(fs.readFileSync(pom))}`;
  if (isInstalled(libDir(), stamp)) return;
  requireMaven(MAVEN_PURPOSE);
  const cached = fs.existsSync(path.join(mavenRepo(), 'org', 'apache', 'kafka', 'kafka_2.13', KAFKA_VERSION));
  progress(
    cached
      ? `installing Kafka ${KAFKA_VERSION} from the local Maven cache…`
      : `resolving Kafka ${KAFKA_VERSION} from Maven Central (first run only)…`,
  );
  const t0 = Date.now();
  fs.mkdirSync(kafkaDir(), { recursive: true });
  await mavenCopyDependencies(pom, libDir(), `resolving Kafka ${KAFKA_VERSION} with Maven`);
  markInstalled(libDir(), stamp);
  progress(`Kafka ${KAFKA_VERSION} installed in ${shown(libDir())} (${seconds(Date.now() - t0)})`);
}

/** Writes server.properties and log4j.properties for the configured ports; returns the server file. */
function writeConfigFiles(): string {
  const c = config();
  const confDir = kafkaDir('config');
  fs.mkdirSync(confDir, { recursive: true });
  fs.mkdirSync(dataDir('logs'), { recursive: true });
  const server = [
    '# Written by infra/kafka.ts on every start; edit that file instead.',
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@${LOCAL_HOST}:${c.KAFKA_CONTROLLER_PORT}`,
    `listeners=PLAINTEXT://${LOCAL_HOST}:${c.KAFKA_PORT},CONTROLLER://${LOCAL_HOST}:${c.KAFKA_CONTROLLER_PORT}`,
    `advertised.listeners=PLAINTEXT://${LOCAL_HOST}:${c.KAFKA_PORT}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${kafkaDir('data')}`,
    'num.partitions=3',
    'auto.create.topics.enable=true',
    'default.replication.factor=1',
    'offsets.topic.replication.factor=1',
    // Fewer internal partitions than the default 50: the first consumer group comes up faster.
    'offsets.topic.num.partitions=10',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=10',
    'min.insync.replicas=1',
    'group.initial.rebalance.delay.ms=0',
    'log.retention.hours=168',
    'num.network.threads=2',
    'num.io.threads=4',
    '',
  ].join('\n');
  const serverFile = path.join(confDir, 'server.properties');
  fs.writeFileSync(serverFile, server);
  const log4j = [
    '# Written by infra/kafka.ts: all broker logs go to one file, none to the console.',
    'log4j.rootLogger=INFO, file',
    'log4j.appender.file=org.apache.log4j.RollingFileAppender',
    `log4j.appender.file.File=${logFile(kafkaEngine)}`,
    'log4j.appender.file.MaxFileSize=20MB',
    'log4j.appender.file.MaxBackupIndex=2',
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    'log4j.logger.kafka=INFO',
    'log4j.logger.org.apache.kafka=INFO',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.state.change.logger=WARN',
    'log4j.logger.kafka.log.LogCleaner=WARN',
    'log4j.logger.org.apache.kafka.storage.internals.log=WARN',
    '',
  ].join('\n');
  fs.writeFileSync(path.join(confDir, 'log4j.properties'), log4j);
  return serverFile;
}

function jvmArgs(): string[] {
  return [
    `-Dlog4j.configuration=file:${kafkaDir('config', 'log4j.properties')}`,
    `-Dkafka.logs.dir=${dataDir('logs')}`,
    '-Djava.awt.headless=true',
  ];
}

/** Formats the KRaft storage once (cluster id kept in <DATA_DIR>/kafka/cluster.id). */
async function ensureFormatted(java: string, serverFile: string): Promise<void> {
  if (fs.existsSync(kafkaDir('data', 'meta.properties'))) return;
  const idFile = kafkaDir('cluster.id');
  let id = fs.existsSync(idFile) ? fs.readFileSync(idFile, 'utf8').trim() : '';
  const tool = (args: string[]) =>
    run(
      java,
      ['-Xmx256m', ...SHORT_JVM, ...jvmArgs(), '-cp', classpath(), 'kafka.tools.StorageTool', ...args],
      `formatting Kafka's storage (kafka.tools.StorageTool ${args[0]})`,
      logsDir('kafka-format.log'),
    );
  if (!id) {
    const out = await tool(['random-uuid']);
    id = clusterIdIn(out);
    if (!id)
      throw new InfraError(
        `infra: kafka.tools.StorageTool random-uuid printed no cluster id; see ${shown(logsDir('kafka-format.log'))}`,
      );
    fs.writeFileSync(idFile, `${id}\n`);
  }
  progress(`formatting Kafka storage in ${shown(kafkaDir('data'))} (cluster ${id})…`);
  await tool(['format', '-t', id, '-c', serverFile, '--ignore-formatted']);
}

/** True once a kafkajs admin can list topics on the broker. */
export async function kafkaAdminAnswers(brokers: string[]): Promise<boolean> {
  const kafka = new Kafka({
    clientId: 'infra-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1500,
    requestTimeout: 3000,
    retry: { retries: 0 },
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

const where = () => `${LOCAL_HOST}:${config().KAFKA_PORT}`;

/**
 * Whether the local broker must be started: false when it already answers (or another `infra up`
 * is starting it — then this waits until it is ready), true when nothing runs.
 */
export async function kafkaNeedsStart(): Promise<boolean> {
  const c = config();
  const brokers = [where()];
  const pid = runningPid(kafkaEngine);
  if (await portAnswers(c.KAFKA_PORT)) {
    if (!(await kafkaAdminAnswers(brokers))) {
      progress(`port ${c.KAFKA_PORT} answers; waiting for the broker to accept requests…`);
      await waitUntilReady(kafkaEngine, () => kafkaAdminAnswers(brokers), { timeoutMs: READY_TIMEOUT_MS, where: where() });
    }
    progress(`Kafka already running on ${where()}${pid ? ` (pid ${pid})` : ''}`);
    return false;
  }
  if (pid !== undefined) {
    // Started by another `infra up` that is still waiting for it: wait too, don't start a second one.
    progress(`Kafka is starting (pid ${pid}); waiting for ${where()}…`);
    await waitUntilReady(kafkaEngine, () => kafkaAdminAnswers(brokers), {
      timeoutMs: READY_TIMEOUT_MS,
      where: where(),
      exited: () => (runningPid(kafkaEngine) === undefined ? 'exited' : undefined),
    });
    return false;
  }
  return true;
}

/** Installs (first run only), formats (once) and starts the broker, then waits until it serves requests. */
export async function startKafka(): Promise<void> {
  const c = config();
  const java = requireJava(JAVA_PURPOSE);
  await ensureInstalled(); // synchronous up to its Maven run: callers rely on the queue order
  const serverFile = writeConfigFiles();
  await ensureFormatted(java, serverFile);
  progress(`starting Kafka on ${where()}…`);
  const t0 = Date.now();
  const started = startDetached(
    kafkaEngine,
    java,
    // 1 GiB of heap: a test run makes thousands of topics (one prefix per test file), and each
    // partition costs the broker heap; at 512 MiB a long-lived local broker ran out (17,767 partitions).
    ['-Xmx1g', '-Xms128m', ...jvmArgs(), '-cp', classpath(), 'kafka.Kafka', serverFile],
    { version: KAFKA_VERSION, port: c.KAFKA_PORT, controllerPort: c.KAFKA_CONTROLLER_PORT, data: kafkaDir('data') },
    kafkaDir(),
  );
  const brokers = [where()];
  await waitUntilReady(kafkaEngine, async () => (await portAnswers(c.KAFKA_PORT)) && kafkaAdminAnswers(brokers), {
    timeoutMs: READY_TIMEOUT_MS,
    exited: started.exited,
    where: where(),
  });
  progress(`Kafka ready in ${seconds(Date.now() - t0)} (pid ${started.pid})`);
}

export function kafkaDataDir(): string {
  return kafkaDir('data');
}

/** The cluster id `kafka.tools.StorageTool random-uuid` printed (its last 22-character base64url line), or ''. */
export function clusterIdIn(out: string): string {
  return (
    out
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^[A-Za-z0-9_-]{22}$/.test(l))
      .pop() ?? ''
  );
}
