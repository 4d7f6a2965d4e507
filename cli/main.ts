import path from 'node:path';
import { parseArgs } from 'node:util';
import { type ProcessRole, startPlatform } from '../app/platform';
import { type ReplicaPlan, startReplicas } from '../app/replicas';
import { areas, buildAreas, compositionInput } from '../app/areas';
import { infraDown, infraStatus, infraUp } from '../infra/index';
import { ensureChromium } from '../infra/chromium';
import { mariadbDown, mariadbUp } from '../infra/mariadb';
import { mongoWireNeedsStart, startMongoWire } from '../infra/mongo-wire';
import { DEFAULT_CLUSTER_BASE_PORT, kafkaClusterDown, kafkaClusterUp } from '../infra/kafka-cluster';
import { writeComposedSchema } from '../router/compose';
import { writeDeploymentFiles } from '../app/deployment';
import { type AreaContext, type CliCommand, CliUsageError } from '../core/area';
import { config } from '../core/config';
import { isPlatformError } from '../core/errors';
import { createKafkaEventBus } from '../core/events/kafka-event-bus';
import { connectMongo, ensureIndexes } from '../core/mongo';
import { OperationEngine } from '../core/operations/engine';
import { NODES_AGENT_USAGE, runNodeAgent } from './nodes-agent';
import { newArea, newRoute } from './scaffold';
import { dataDir, findStandIns, recordStandIns, standInsDir } from './stand-ins';
import { collectStatus, formatStatus, recordProcess } from './status';

process.env.APOLLO_TELEMETRY_DISABLED = '1';

const BUILT_IN = `usage: platform <command>

  start [all|router|bridge|subgraph NAME] [--with-infra]   run the platform (foreground; Ctrl-C stops)
  start --replicas N [--bridges N] [--routers N] [--subgraph-replicas N] [--subgraphs a,b]
                                                           N processes of each role behind round-robin fronts
  compose [--check]                                        regenerate schema/, docker-compose.yml, prometheus.yml (or fail when stale)
  infra up|down|status [--kafka-brokers N] [--browser]     local Kafka and MongoDB-wire server (N>1: a KRaft cluster on 19092…; --browser: Debian chromium)
  status [--json]                                          running processes, engines, queues, outbox, consumer lag
  new-area NAME                                            scaffold subgraphs/NAME and its registry line
  new-route AREA METHOD PATH                               scaffold a route row and its GraphQL document
  ${NODES_AGENT_USAGE}   run a connected node's agent (foreground; API only)
`;

/** Every area's commands (docs/contracts.md); each creating one takes --json. */
function usage(): string {
  const lines = areaCommands().map(({ command }) => `  ${[...command.words, command.usage].join(' ')} [--json]`);
  const note = '\n  --api-url URL on an area command picks the running platform whose stand-ins it uses (default: BRIDGE_PORT)\n';
  return `${BUILT_IN}${lines.join('\n')}\n${note}`;
}

type AnyCommand = CliCommand<any>;
const areaCommands = (): Array<{ area: string; command: AnyCommand }> =>
  areas().flatMap((a) => (a.cli ?? []).map((command) => ({ area: a.name, command })));

/** Where each `platform start` records the addresses of its stand-ins, one file per instance (`stand-ins.ts`). */
const STAND_INS_DIR = () => standInsDir(config().DATA_DIR);
/** Where each running `platform start` records itself, for `platform status` (an absolute DATA_DIR as given). */
const PROCESSES_DIR = () => path.join(dataDir(config().DATA_DIR), 'processes');

function fail(message: string): never {
  throw new CliUsageError(message);
}

/** The `platform` command line. */
export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'start':
        return await start(rest);
      case 'compose':
        return await compose(rest);
      case 'infra':
        return await infra(rest);
      case 'status':
        return await status(rest);
      case 'new-area': {
        if (rest.length !== 1) fail('new-area takes NAME (npm run new:area NAME)');
        const files = await newArea(rest[0]);
        process.stdout.write(`wrote ${files.join(', ')}\nnext: npm run compose, then fill in subgraphs/${rest[0]}/service.ts\n`);
        return;
      }
      case 'new-route': {
        if (rest.length !== 3) fail('new-route takes AREA[/MODULE] METHOD PATH (npm run new:route AREA[/MODULE] METHOD PATH)');
        const files = await newRoute(rest[0], rest[1], rest[2]);
        process.stdout.write(`wrote ${files.join(', ')}\nnext: the resolver and service method, then npm run compose\n`);
        return;
      }
      case 'nodes':
        // The agent runs on the customer's machine: the platform's API only, no database (cli/nodes-agent.ts).
        if (rest[0] === 'agent') return await runNodeAgent(rest.slice(1));
        return await areaCommand(argv);
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(usage());
        return;
      default:
        return await areaCommand(argv);
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`platform: ${message}\n`);
    // Usage errors (docs/contracts.md): one sentence, exit code 2; a refused value is one too.
    const usageError = e instanceof CliUsageError || (isPlatformError(e) && e.status === 400);
    process.exit(usageError ? 2 : 1);
  }
}

async function infra(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'kafka-brokers': { type: 'string' },
      'kafka-base-port': { type: 'string' },
      mysql: { type: 'boolean' },
      browser: { type: 'boolean' },
    },
  });
  const [sub] = positionals;
  // `--browser`: Debian's chromium for the console's browser tests, installed when missing (infra/chromium.ts).
  if (values.browser && sub === 'up') ensureChromium();
  // `--mysql`: the MariaDB stand-in for `PUBLISHER_MYSQL_URL` (infra/mariadb.ts; docs/decisions/0220).
  if (values.mysql && sub === 'up') {
    await infraUp();
    process.stdout.write(`PUBLISHER_MYSQL_URL=${(await mariadbUp()).url}\n`);
    return;
  }
  if (values.mysql && sub === 'down') return void (await mariadbDown());
  // `--kafka-brokers N` (N > 1): a separate N-node KRaft cluster on its own ports and data folder
  // (infra/kafka-cluster.ts); without it, the single broker exactly as before.
  const nodes = values['kafka-brokers'] === undefined ? 1 : Number(values['kafka-brokers']);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 9) fail('--kafka-brokers takes a node count from 1 to 9');
  const basePort = values['kafka-base-port'] === undefined ? DEFAULT_CLUSTER_BASE_PORT : Number(values['kafka-base-port']);
  if (!Number.isInteger(basePort) || basePort < 1 || basePort > 65000) fail('--kafka-base-port takes a port number');
  const cluster = nodes > 1 ? { nodes, basePort } : undefined;
  if (sub === 'up') {
    if (!cluster) return void (await infraUp());
    // The MongoDB-wire server as usual; the single broker is neither started nor touched.
    if (!config().externalMongo && (await mongoWireNeedsStart())) await startMongoWire();
    const brokers = await kafkaClusterUp(cluster);
    process.stdout.write(`KAFKA_BROKERS=${brokers.join(',')}\n`);
  } else if (sub === 'down') {
    if (cluster) await kafkaClusterDown(cluster);
    else await infraDown();
  } else if (sub === 'status') await infraStatus();
  else fail('infra takes up, down or status');
}

async function compose(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { check: { type: 'boolean' } } });
  const check = Boolean(values.check);
  const stale = await writeComposedSchema(await compositionInput(config().SUBGRAPH_BASE_PORT), check);
  // The deployment files name every area too (docker-compose.yml, prometheus.yml; app/deployment.ts).
  stale.push(...(await writeDeploymentFiles(check)));
  if (check && stale.length) {
    throw new Error(`generated files are stale: ${stale.join(', ')}; run \`npm run compose\` and commit the result`);
  }
  process.stdout.write(stale.length ? `wrote ${stale.join(', ')}\n` : 'schema/ and the deployment files are up to date\n');
}

async function start(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      'with-infra': { type: 'boolean' },
      replicas: { type: 'string' },
      bridges: { type: 'string' },
      routers: { type: 'string' },
      'subgraph-replicas': { type: 'string' },
      subgraphs: { type: 'string' },
    },
  });
  const [what = 'all', name] = positionals;
  const counts = ['replicas', 'bridges', 'routers', 'subgraph-replicas'] as const;
  if (counts.some((k) => values[k] !== undefined)) {
    if (what !== 'all') fail('--replicas runs every role; it takes no role');
    const count = (k: (typeof counts)[number]) => {
      const v = values[k] ?? values.replicas ?? '1';
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1 || n > 16) fail(`--${k} takes a count from 1 to 16`);
      return n;
    };
    return startReplicated(
      {
        bridges: count('bridges'),
        routers: count('routers'),
        subgraphs: count('subgraph-replicas'),
        only: values.subgraphs?.split(',').filter(Boolean),
      },
      Boolean(values['with-infra']),
    );
  }
  let role: ProcessRole;
  if (what === 'all' || what === 'router' || what === 'bridge') role = { kind: what };
  else if (what === 'subgraph' && name) role = { kind: 'subgraph', name };
  else fail('start takes all, router, bridge or subgraph NAME');
  let infraStarted: { mongoStarted: boolean; kafkaStarted: boolean } | undefined;
  if (values['with-infra']) infraStarted = await infraUp();
  const platform = await startPlatform({ role });
  const standIns = Object.fromEntries(
    areas()
      .flatMap((a) => a.standIns ?? [])
      .map((s) => [s.env, platform.config.env[s.env]])
      .filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  const standInsRecord = await recordStandIns(STAND_INS_DIR(), {
    bridgeUrl: platform.bridgeUrl,
    routerUrl: platform.routerUrl,
    standIns,
  });
  const unrecord = await recordProcess(PROCESSES_DIR(), role, platform);
  const lines = [
    platform.bridgeUrl && `REST bridge   ${platform.bridgeUrl}  (GET /healthz, /readyz, /api/v1/openapi.json)`,
    platform.routerUrl && `GraphQL       ${platform.routerUrl}  (queries, mutations, graphql-ws subscriptions)`,
    platform.cdnUrl && `CDN           ${platform.cdnUrl}`,
    platform.edgeUrl &&
      `edge          ${platform.edgeUrl}  (hosted sites by Host: ${platform.dataPlane!.siteUrl('<slug>')}; executor ${platform.services.publisher.infra.kind})`,
    ...Object.entries(standIns).map(([env, value]) => `stand-in      ${value}  (${env})`),
    ...Object.entries(platform.subgraphUrls).map(([n, u]) => `subgraph      ${u}  (${n})`),
  ].filter(Boolean);
  process.stderr.write(`platform: running (Ctrl-C stops)\n  ${lines.join('\n  ')}\n`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`platform: ${signal}, stopping…\n`);
    await platform.stop();
    await unrecord();
    // The stand-ins stopped with it: later CLI calls must not be sent to their old addresses
    // (this instance's record only; another instance's stays).
    await standInsRecord.remove();
    if (infraStarted && (infraStarted.mongoStarted || infraStarted.kafkaStarted)) {
      await infraDown({ mongo: infraStarted.mongoStarted, kafka: infraStarted.kafkaStarted });
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

/** `platform start --replicas N`: N processes of every role behind local round-robin fronts (app/replicas.ts). */
async function startReplicated(plan: ReplicaPlan, withInfra: boolean): Promise<void> {
  if (withInfra) await infraUp();
  const cfg = config();
  const set = await startReplicas({ plan, config: cfg });
  const lines = [
    `REST bridge   ${set.bridgeUrl}  (round-robin over ${plan.bridges} bridge(s))`,
    `GraphQL       ${set.routerUrl}  (round-robin over ${plan.routers} router(s); no graphql-ws through the front)`,
    ...Object.entries(set.subgraphUrls).map(([n, u]) => `subgraph      ${u}  (${n}, ${plan.subgraphs} replica(s))`),
    ...set.replicas.map((r) => `replica       ${r.url}  ${r.label} (pid ${r.pid() ?? '-'})`),
  ];
  process.stderr.write(`platform: running replicas (Ctrl-C stops)\n  ${lines.join('\n  ')}\n`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`platform: ${signal}, stopping the replicas…\n`);
    await set.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

/**
 * `platform status`: what the running platform is doing, read from its engines (never starts them).
 * With `--json`, one JSON object on the last line of stdout.
 */
async function status(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean' } } });
  const cfg = { ...config(), env: { ...process.env } };
  const conn = await connectMongo(cfg.mongodbUri).catch(() => undefined);
  const bus = createKafkaEventBus({ brokers: cfg.kafkaBrokers, clientId: 'platform-status' });
  try {
    // The areas' models, so that every collection with an outbox is counted.
    if (conn) buildAreas({ config: cfg, conn, bus, engine: new OperationEngine({ conn }), topicPrefix: cfg.KAFKA_TOPIC_PREFIX });
    const report = await collectStatus({ conn, bus, topicPrefix: cfg.KAFKA_TOPIC_PREFIX, processesDir: PROCESSES_DIR() });
    process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatStatus(report)}\n`);
  } finally {
    await bus.close().catch(() => undefined);
    await conn?.close().catch(() => undefined);
  }
}

/**
 * Runs an area's command on the configured MongoDB (starting the local engines if need be) with the
 * same services the API uses. Stand-ins a running `platform start` recorded are found through
 * `<DATA_DIR>/stand-ins/<port>.json` (the instance at `--api-url`, else at BRIDGE_PORT, else the
 * only one running) unless their variable is set.
 */
async function areaCommand(argv: string[]): Promise<void> {
  const match = areaCommands()
    .filter(({ command }) => command.words.every((w, i) => argv[i] === w))
    .sort((a, b) => b.command.words.length - a.command.words.length)[0];
  if (!match)
    fail(
      `unknown command "${argv
        .filter((a) => !a.startsWith('-'))
        .slice(0, 3)
        .join(' ')}"`,
    );
  const { area, command } = match!;
  const { values } = parseArgs({
    args: argv.slice(command.words.length),
    options: { ...command.options, json: { type: 'boolean' }, 'api-url': { type: 'string' } },
  }) as { values: Record<string, string | boolean | string[] | undefined> };
  const missing = (command.required ?? []).filter((name) => typeof values[name] !== 'string' || !values[name]);
  if (missing.length > 0) {
    const wanted = (command.required ?? []).map((name) => new RegExp(`--${name} \\S+`).exec(command.usage)?.[0] ?? `--${name}`);
    fail(`${command.words.join(' ')} needs ${wanted.join(' ')}`);
  }
  const apiUrl = typeof values['api-url'] === 'string' ? values['api-url'] : null;
  const found = await findStandIns(STAND_INS_DIR(), { apiUrl, bridgePort: config().BRIDGE_PORT });
  if (found.note) process.stderr.write(`platform: ${found.note}\n`);
  for (const [env, value] of Object.entries(found.record?.standIns ?? {})) process.env[env] ??= value;
  const cfg = { ...config(), env: { ...process.env } };
  if (!cfg.externalMongo) await infraUp({ quiet: true });
  const conn = await connectMongo(cfg.mongodbUri);
  const bus = createKafkaEventBus({ brokers: cfg.kafkaBrokers, clientId: 'platform-cli' });
  try {
    const engine = new OperationEngine({ conn, bus });
    const built = buildAreas({ config: cfg, conn, bus, engine, topicPrefix: cfg.KAFKA_TOPIC_PREFIX });
    await ensureIndexes(conn);
    const services = (built.services as Record<string, unknown>)[area];
    const ctx = built.contexts.get(area) as AreaContext<unknown>;
    const result = await command.run({ values, services, ctx });
    const json = Boolean(values.json);
    const human = command.describe ? command.describe(result) : JSON.stringify(result, null, 2);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${human}\n`);
  } finally {
    await bus.close().catch(() => undefined);
    await conn.close();
  }
}
