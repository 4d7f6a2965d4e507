import fs from 'node:fs';
import { KAFKA_VERSION, classpath, clusterIdIn, ensureInstalled, kafkaAdminAnswers } from './kafka';
import { type EngineProcess, logFile, runningPid, startDetached, stopEngine, waitUntilReady } from './processes';
import {
  InfraError,
  JAVA_PURPOSE,
  LOCAL_HOST,
  SHORT_JVM,
  dataDir,
  logsDir,
  portAnswers,
  progress,
  requireJava,
  run,
  seconds,
  shown,
} from './tools';

/**
 * A local Kafka cluster of several combined KRaft nodes (broker + controller each), from the same
 * Maven artifacts as the single broker (infra/kafka.ts), for running and testing replicas on a
 * cluster (docs/decisions/0200-replicas-and-kafka-cluster.md). Every node has its own data folder
 * under <DATA_DIR>/kafka-cluster/node<i>, its own pid file and log, and its own ports, so the
 * cluster never touches the single broker (9092/9093) and both can run side by side:
 *
 *   node i (1-based): client port  basePort + i - 1          (19092, 19093, 19094)
 *                     controller   basePort + 100 + i - 1    (19192, 19193, 19194)
 *
 * Topics are created with replication factor = min(3, nodes) and `min.insync.replicas` = that - 1
 * (2 for three nodes), so one node may die without a write being refused or an acknowledged write
 * being lost; producers write with acks=all (core/events/kafka-event-bus.ts).
 */
export const DEFAULT_CLUSTER_BASE_PORT = 19092;
/** Controller ports sit this far above the client ports. */
const CONTROLLER_OFFSET = 100;
const READY_TIMEOUT_MS = 180_000;

export interface ClusterOptions {
  /** Number of nodes: 3 gives replication factor 3 and min.insync.replicas 2. */
  nodes: number;
  /** Client port of node 1 (the others follow): 19092. */
  basePort?: number;
}

const clusterDir = (basePort: number, ...p: string[]) => dataDir(`kafka-cluster-${basePort}`, ...p);
const nodeDir = (basePort: number, i: number, ...p: string[]) => clusterDir(basePort, `node${i}`, ...p);
const clientPort = (basePort: number, i: number) => basePort + i - 1;
const controllerPort = (basePort: number, i: number) => basePort + CONTROLLER_OFFSET + i - 1;

/** The engine record of node `i` (its marker is its own server.properties path, unique on the machine). */
export function clusterNode(i: number, basePort = DEFAULT_CLUSTER_BASE_PORT): EngineProcess {
  return {
    name: `kafka-cluster-${basePort}-node${i}`,
    label: `Kafka cluster node ${i}`,
    marker: nodeDir(basePort, i, 'server.properties'),
  };
}

/** `host:port` of every node's client listener, for KAFKA_BROKERS. */
export function clusterBrokers(opts: ClusterOptions): string[] {
  const base = opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT;
  return Array.from({ length: opts.nodes }, (_, k) => `${LOCAL_HOST}:${clientPort(base, k + 1)}`);
}

/** The replication settings the cluster's topics get. */
export function replicationOf(nodes: number): { replicationFactor: number; minInsyncReplicas: number } {
  const replicationFactor = Math.min(3, nodes);
  return { replicationFactor, minInsyncReplicas: Math.max(1, replicationFactor - 1) };
}

function writeNodeConfig(opts: Required<ClusterOptions>, i: number): string {
  const base = opts.basePort;
  const { replicationFactor: rf, minInsyncReplicas: isr } = replicationOf(opts.nodes);
  const voters = Array.from({ length: opts.nodes }, (_, k) => `${k + 1}@${LOCAL_HOST}:${controllerPort(base, k + 1)}`).join(',');
  fs.mkdirSync(nodeDir(base, i), { recursive: true });
  const server = [
    '# Written by infra/kafka-cluster.ts on every start; edit that file instead.',
    'process.roles=broker,controller',
    `node.id=${i}`,
    `controller.quorum.voters=${voters}`,
    `listeners=PLAINTEXT://${LOCAL_HOST}:${clientPort(base, i)},CONTROLLER://${LOCAL_HOST}:${controllerPort(base, i)}`,
    `advertised.listeners=PLAINTEXT://${LOCAL_HOST}:${clientPort(base, i)}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${nodeDir(base, i, 'data')}`,
    'num.partitions=3',
    'auto.create.topics.enable=true',
    `default.replication.factor=${rf}`,
    `min.insync.replicas=${isr}`,
    `offsets.topic.replication.factor=${rf}`,
    'offsets.topic.num.partitions=10',
    `transaction.state.log.replication.factor=${rf}`,
    `transaction.state.log.min.isr=${isr}`,
    'transaction.state.log.num.partitions=10',
    // A replica that is not the leader is elected only from the in-sync set: no acknowledged write is lost.
    'unclean.leader.election.enable=false',
    'group.initial.rebalance.delay.ms=0',
    'log.retention.hours=168',
    'num.network.threads=2',
    'num.io.threads=2',
    '',
  ].join('\n');
  const file = nodeDir(base, i, 'server.properties');
  fs.writeFileSync(file, server);
  fs.writeFileSync(
    nodeDir(base, i, 'log4j.properties'),
    [
      '# Written by infra/kafka-cluster.ts.',
      'log4j.rootLogger=WARN, file',
      'log4j.appender.file=org.apache.log4j.RollingFileAppender',
      `log4j.appender.file.File=${logFile(clusterNode(i, base))}`,
      'log4j.appender.file.MaxFileSize=20MB',
      'log4j.appender.file.MaxBackupIndex=1',
      'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka=INFO',
      'log4j.logger.org.apache.kafka=WARN',
      '',
    ].join('\n'),
  );
  return file;
}

const jvmArgs = (base: number, i: number) => [
  `-Dlog4j.configuration=file:${nodeDir(base, i, 'log4j.properties')}`,
  `-Dkafka.logs.dir=${logsDir()}`,
  '-Djava.awt.headless=true',
];

/** One cluster id for all nodes (kept in the cluster folder); each node formatted once. */
async function ensureFormatted(java: string, opts: Required<ClusterOptions>, i: number, file: string): Promise<void> {
  const base = opts.basePort;
  if (fs.existsSync(nodeDir(base, i, 'data', 'meta.properties'))) return;
  const idFile = clusterDir(base, 'cluster.id');
  const tool = (args: string[]) =>
    run(
      java,
      ['-Xmx256m', ...SHORT_JVM, ...jvmArgs(base, i), '-cp', classpath(), 'kafka.tools.StorageTool', ...args],
      `formatting Kafka cluster node ${i} (kafka.tools.StorageTool ${args[0]})`,
      logsDir(`kafka-cluster-${base}-format.log`),
    );
  let id = fs.existsSync(idFile) ? fs.readFileSync(idFile, 'utf8').trim() : '';
  if (!id) {
    const out = await tool(['random-uuid']);
    id = clusterIdIn(out);
    if (!id) throw new InfraError('infra: kafka.tools.StorageTool random-uuid printed no cluster id');
    fs.mkdirSync(clusterDir(base), { recursive: true });
    fs.writeFileSync(idFile, `${id}\n`);
  }
  await tool(['format', '-t', id, '-c', file, '--ignore-formatted']);
}

/** Starts node `i` (formatted once) unless it already runs; does not wait for it. */
export async function startClusterNode(
  opts: ClusterOptions,
  i: number,
): Promise<{ started: boolean; exited: () => string | undefined }> {
  const full = { basePort: opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT, nodes: opts.nodes };
  const engine = clusterNode(i, full.basePort);
  if (runningPid(engine) !== undefined || (await portAnswers(clientPort(full.basePort, i)))) {
    return { started: false, exited: () => undefined };
  }
  const java = requireJava(JAVA_PURPOSE);
  const file = writeNodeConfig(full, i);
  await ensureFormatted(java, full, i, file);
  const started = startDetached(
    engine,
    java,
    ['-Xmx384m', '-Xms64m', ...jvmArgs(full.basePort, i), '-cp', classpath(), 'kafka.Kafka', file],
    { version: KAFKA_VERSION, node: i, port: clientPort(full.basePort, i), data: nodeDir(full.basePort, i, 'data') },
    nodeDir(full.basePort, i),
  );
  return { started: true, exited: started.exited };
}

/** The pid of node `i`, when it runs. */
export function clusterNodePid(opts: ClusterOptions, i: number): number | undefined {
  return runningPid(clusterNode(i, opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT));
}

/**
 * Installs Kafka (first use), then starts every node that is not running, in parallel, and waits
 * until the cluster serves requests. Idempotent. Never touches the single broker.
 */
export async function kafkaClusterUp(opts: ClusterOptions): Promise<string[]> {
  if (!Number.isInteger(opts.nodes) || opts.nodes < 1 || opts.nodes > 9) {
    throw new InfraError('infra: --kafka-brokers takes a node count from 1 to 9');
  }
  requireJava(JAVA_PURPOSE);
  await ensureInstalled();
  const brokers = clusterBrokers(opts);
  const t0 = Date.now();
  const starts: Array<{ started: boolean; exited: () => string | undefined }> = [];
  for (let i = 1; i <= opts.nodes; i++) starts.push(await startClusterNode(opts, i));
  const started = starts.filter((s) => s.started).length;
  if (started > 0) progress(`starting ${started} Kafka cluster node(s) on ${brokers.join(',')}…`);
  const { replicationFactor, minInsyncReplicas } = replicationOf(opts.nodes);
  await waitUntilReady(clusterNode(1, opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT), () => clusterAnswers(brokers, opts.nodes), {
    timeoutMs: READY_TIMEOUT_MS,
    where: brokers.join(','),
    exited: () => starts.map((s) => s.exited()).find(Boolean),
  });
  progress(
    `Kafka cluster of ${opts.nodes} ready in ${seconds(Date.now() - t0)}: KAFKA_BROKERS=${brokers.join(',')} (replication factor ${replicationFactor}, min.insync.replicas ${minInsyncReplicas}); data in ${shown(clusterDir(opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT))}, logs in ${shown(logsDir())}/`,
  );
  return brokers;
}

/** True when every node answers as a broker of the cluster. */
async function clusterAnswers(brokers: string[], nodes: number): Promise<boolean> {
  for (const b of brokers) if (!(await kafkaAdminAnswers([b]))) return false;
  return nodes > 0;
}

/** Stops every node of the cluster (SIGTERM, then SIGKILL after 15 s). The single broker is not touched. */
export async function kafkaClusterDown(opts: ClusterOptions): Promise<void> {
  const base = opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT;
  await Promise.all(
    Array.from({ length: opts.nodes }, async (_, k) => {
      const outcome = await stopEngine(clusterNode(k + 1, base));
      progress(`Kafka cluster node ${k + 1}: ${outcome}`);
    }),
  );
}

/** Removes the cluster's data (tests and trials start from an empty cluster). Nodes must be stopped. */
export function removeClusterData(opts: ClusterOptions): void {
  const base = opts.basePort ?? DEFAULT_CLUSTER_BASE_PORT;
  for (let i = 1; i <= opts.nodes; i++) {
    if (clusterNodePid(opts, i) !== undefined) throw new InfraError(`infra: cluster node ${i} still runs`);
  }
  fs.rmSync(clusterDir(base), { recursive: true, force: true });
}
