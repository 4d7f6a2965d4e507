import { ensureBubblewrapInstalled } from './bubblewrap';
import { brokerHostPort, mongoHostPort } from '../core/addresses';
import { config } from '../core/config';
import { KAFKA_VERSION, kafkaAdminAnswers, kafkaDataDir, kafkaEngine, kafkaNeedsStart, startKafka } from './kafka';
import { h2File, mongoWireEngine, mongoWireNeedsStart, startMongoWire } from './mongo-wire';
import { type EngineProcess, logFile, readInfo, runningPid, stopEngine, withLockFile } from './processes';
import {
  JAVA_PURPOSE,
  LOCAL_HOST,
  dataDir,
  logsDir,
  portAnswers,
  progress,
  requireJava,
  runDir,
  seconds,
  setQuiet,
  shown,
} from './tools';

/**
 * The project's local infrastructure: a real Kafka broker (Apache Kafka 3.9.1, KRaft) and a
 * MongoDB-wire server (mongo-java-server), installed from Maven Central on first use and run as
 * detached processes with data, logs and pid files under <DATA_DIR>. When MONGODB_URI /
 * KAFKA_BROKERS are set, that engine is external: used as given, never installed, started or stopped.
 */
export interface InfraResult {
  mongoStarted: boolean;
  kafkaStarted: boolean;
}

/** Whether the external MongoDB answers: true/false, or undefined when it can't be probed by TCP. */
async function externalMongoAnswers(): Promise<boolean | undefined> {
  const hp = mongoHostPort(config().mongodbUri);
  return hp ? portAnswers(hp.port, hp.host, 2000) : undefined;
}

async function externalKafkaAnswers(): Promise<boolean> {
  const hp = brokerHostPort(config().kafkaBrokers[0]);
  return (await portAnswers(hp.port, hp.host, 2000)) && kafkaAdminAnswers(config().kafkaBrokers);
}

/** Whether the local MongoDB-wire server must be started (never for an external MongoDB). */
async function mongoNeedsStart(): Promise<boolean> {
  if (config().externalMongo) {
    const answers = await externalMongoAnswers();
    progress(
      `using the external MongoDB from MONGODB_URI${answers === false ? ' — it does not answer yet' : answers ? ' (answers)' : ''}; nothing started`,
    );
    return false;
  }
  return mongoWireNeedsStart();
}

/** Whether the local broker must be started (never for an external Kafka). */
async function brokerNeedsStart(): Promise<boolean> {
  if (config().externalKafka) {
    const answers = await externalKafkaAnswers();
    progress(
      `using the external Kafka from KAFKA_BROKERS (${config().kafkaBrokers.join(',')})${answers ? ' (answers)' : ' — it does not answer yet'}; nothing started`,
    );
    return false;
  }
  return kafkaNeedsStart();
}

/** Where the MongoDB-wire server keeps its data, for messages. */
function mongoDataShown(): string {
  const info = readInfo(mongoWireEngine);
  if (info?.backend === 'memory') return 'memory (MongoDB-wire, nothing kept)';
  return shown(typeof info?.file === 'string' ? info.file : h2File());
}

/** The messages of the rejected results, each once, as one Error. */
function failure(results: PromiseSettledResult<unknown>[]): Error | undefined {
  const messages = results
    .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    .map((r) => (r.reason instanceof Error ? r.reason.message : String(r.reason)));
  return messages.length ? new Error([...new Set(messages)].join('\n')) : undefined;
}

/**
 * Brings the local MongoDB-wire server and Kafka up, in parallel, installing them on first use.
 * Idempotent: an engine whose port already answers is left as it is. Throws an Error with one
 * clear message (a missing tool, a start-up failure pointing at its log) when something fails.
 */
export async function infraUp(opts: { quiet?: boolean } = {}): Promise<InfraResult> {
  setQuiet(Boolean(opts.quiet));
  try {
    const t0 = Date.now();
    const c = config();
    const result =
      c.externalMongo && c.externalKafka
        ? await bringUp()
        : await withLockFile(runDir('infra-up.lock'), 'another `infra up`', 600_000, bringUp);
    const data = [c.externalMongo ? undefined : mongoDataShown(), c.externalKafka ? undefined : shown(kafkaDataDir())].filter(
      Boolean,
    );
    const logs = [c.externalMongo ? undefined : 'mongo-wire.log', c.externalKafka ? undefined : 'kafka.log'].filter(Boolean);
    progress(
      `up in ${seconds(Date.now() - t0)}: MongoDB ${c.externalMongo ? '(external)' : `mongodb://${LOCAL_HOST}:${c.MONGODB_PORT}`}, Kafka ${c.kafkaBrokers.join(',')}${c.externalKafka ? ' (external)' : ''}`,
    );
    if (data.length > 0) {
      progress(
        `data in ${data.join(' and ')}; logs in ${shown(logsDir())}/ (${logs.join(', ')}); stop with \`platform infra down\``,
      );
    }
    return result;
  } finally {
    setQuiet(false);
  }
}

/** Checks both engines, then starts what is needed, in parallel. */
async function bringUp(): Promise<InfraResult> {
  // The tenant sandbox's tool (docs/decisions/0273-tenant-sandbox.md) installs beside the engines' checks.
  const sandbox = process.platform === 'linux' ? ensureBubblewrapInstalled() : Promise.resolve();
  const checks = await Promise.allSettled([mongoNeedsStart(), brokerNeedsStart()]);
  await sandbox;
  const checkFailure = failure(checks);
  if (checkFailure) throw checkFailure;
  const [startMongo, startBroker] = checks.map((r) => (r as PromiseFulfilledResult<boolean>).value);
  if (startMongo || startBroker) {
    requireJava(JAVA_PURPOSE); // one sentence when Java is missing, not one per engine
    // Both start in parallel. Maven runs one at a time in call order: Kafka's first, as its
    // pipeline after Maven (format, start, controller election) is the longer one.
    const starts = await Promise.allSettled([
      startBroker ? startKafka() : Promise.resolve(),
      startMongo ? startMongoWire() : Promise.resolve(),
    ]);
    const startFailure = failure(starts);
    if (startFailure) throw startFailure;
  }
  return { mongoStarted: startMongo, kafkaStarted: startBroker };
}

async function stopLocal(e: EngineProcess, port: number, external: boolean, envName: string): Promise<void> {
  if (external) {
    progress(`${e.label} is external (${envName}); not stopping it`);
    return;
  }
  const pid = runningPid(e);
  const t0 = Date.now();
  if (pid !== undefined) progress(`stopping ${e.label} (pid ${pid})…`);
  const outcome = await stopEngine(e);
  if (outcome === 'not-running') {
    const answers = await portAnswers(port);
    progress(
      answers
        ? `${e.label} was not started by infra, but something answers on ${LOCAL_HOST}:${port}; left alone`
        : `${e.label} is not running`,
    );
  } else {
    progress(`${e.label} ${outcome === 'killed' ? 'did not stop in 15s; killed' : 'stopped'} (${seconds(Date.now() - t0)})`);
  }
}

/** Stops the local engines that `infraUp` started (both by default); external engines are left alone. */
export async function infraDown(opts: { mongo?: boolean; kafka?: boolean } = {}): Promise<void> {
  const c = config();
  const both = opts.mongo === undefined && opts.kafka === undefined;
  const jobs: Promise<void>[] = [];
  if (both || opts.mongo) jobs.push(stopLocal(mongoWireEngine, c.MONGODB_PORT, c.externalMongo, 'MONGODB_URI'));
  if (both || opts.kafka) jobs.push(stopLocal(kafkaEngine, c.KAFKA_PORT, c.externalKafka, 'KAFKA_BROKERS'));
  await Promise.all(jobs);
}

async function localState(e: EngineProcess, port: number, detail: (info: Record<string, unknown>) => string): Promise<string> {
  const pid = runningPid(e);
  const answers = await portAnswers(port);
  const info = readInfo(e) ?? {};
  const at = `${LOCAL_HOST}:${port}`;
  if (pid !== undefined && answers) return `running (pid ${pid}) on ${at}${detail(info)}`;
  if (pid !== undefined) return `starting or stuck (pid ${pid}), ${at} does not answer; see ${shown(logFile(e))}`;
  if (answers) return `answering on ${at} (not started by infra)`;
  return 'stopped';
}

/** Reports each engine's state and prints a short table (stdout). */
export async function infraStatus(): Promise<{ mongo: string; kafka: string }> {
  const c = config();
  const [mongo, kafka] = await Promise.all([
    c.externalMongo
      ? externalMongoAnswers().then(
          (a) =>
            `external (MONGODB_URI), ${a === undefined ? 'not probed (not a mongodb:// host)' : a ? 'answering' : 'NOT answering'}`,
        )
      : localState(mongoWireEngine, c.MONGODB_PORT, (i) =>
          i.backend ? `, ${String(i.backend)} backend${i.file ? ` (${shown(String(i.file))})` : ''}` : '',
        ),
    c.externalKafka
      ? externalKafkaAnswers().then(
          (a) => `external (KAFKA_BROKERS=${c.kafkaBrokers.join(',')}), ${a ? 'answering' : 'NOT answering'}`,
        )
      : localState(kafkaEngine, c.KAFKA_PORT, () => `, Kafka ${KAFKA_VERSION} KRaft`),
  ]);
  const rows: [string, string][] = [
    ['engine', 'state'],
    ['mongodb', mongo],
    ['kafka', kafka],
  ];
  const width = Math.max(...rows.map((r) => r[0].length)) + 2;
  for (const [a, b] of rows) console.log(`${a.padEnd(width)}${b}`);
  console.log(`${'data'.padEnd(width)}${shown(dataDir())}   logs: ${shown(logsDir())}`);
  return { mongo, kafka };
}
