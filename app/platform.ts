process.env.APOLLO_TELEMETRY_DISABLED ??= '1';

import type { FastifyInstance } from 'fastify';
import type { Connection } from 'mongoose';
import { brokerHostPort, mongoHostPort } from '../core/addresses';
import { type Config, config as processConfig } from '../core/config';
import { IdempotencyStore } from '../core/idempotency';
import type { EventBus } from '../core/events/event-bus';
import { createKafkaEventBus } from '../core/events/kafka-event-bus';
import { TOPICS } from '../core/events/topics';
import { portAnswers } from '../infra/tools';
import { childLogger } from '../core/logger';
import { connectMongo, ensureIndexes } from '../core/mongo';
import { OperationEngine } from '../core/operations/engine';
import { serveSubgraph, type RunningServer } from '../core/subgraph-server';
import type { BuiltSubgraph } from '../core/subgraph-kit';
import { inProcessExecutor, httpExecutor } from '../rest-bridge/executor';
import { buildBridge } from '../rest-bridge/server';
import { readSupergraph } from '../router/compose';
import { OperationFeed } from '../router/operation-feed';
import { Router } from '../router/server';
import { IdentityService } from '../subgraphs/identity/service';
import { ConnectedNodes } from '../subgraphs/publisher/nodes';
import { PublisherService } from '../subgraphs/publisher/service';
import { SimulatedInfrastructure } from '../subgraphs/publisher/simulated-infrastructure';
import { type AreaServices, SUBGRAPHS, subgraphPort } from '../subgraphs/registry';

/** Idle scan interval of the operation engine and the outbox relay: 1 s. */
const IDLE_SCAN_MS = 1000;
/** How long /readyz waits for an engine's port: 1.5 s. */
const READY_PROBE_MS = 1500;

/** Which pieces this process runs: everything, or one piece as docker-compose does. */
export type Role = { kind: 'all' } | { kind: 'router' } | { kind: 'bridge' } | { kind: 'subgraph'; name: string };

export interface PlatformOptions {
  role?: Role;
  config?: Config;
  /** Ports: 0 picks a free one (tests). */
  bridgePort?: number;
  routerPort?: number;
  /** Serve each subgraph over HTTP on its own port too (default: true for `all`). */
  serveSubgraphs?: boolean;
  subgraphBasePort?: number;
  /** Kafka topic prefix (tests use a unique one). */
  topicPrefix?: string;
  /** Run operation workers in this process (default true where the publisher subgraph runs). */
  workers?: boolean;
  leaseMs?: number;
}

export interface Platform {
  conn: Connection;
  bus: EventBus;
  services: AreaServices;
  engine: OperationEngine;
  simulated: SimulatedInfrastructure;
  features: { publisherEnabled: boolean };
  bridgeUrl?: string;
  routerUrl?: string;
  subgraphUrls: Record<string, string>;
  subgraphs: BuiltSubgraph[];
  stop(): Promise<void>;
}

/** Starts the platform (or one piece of it) against the configured MongoDB and Kafka. */
export async function startPlatform(opts: PlatformOptions = {}): Promise<Platform> {
  const cfg = opts.config ?? processConfig();
  const role: Role = opts.role ?? { kind: 'all' };
  const log = childLogger('platform', { role: role.kind === 'subgraph' ? `subgraph:${role.name}` : role.kind });
  const stops: Array<() => Promise<void>> = [];
  const topicPrefix = opts.topicPrefix ?? cfg.KAFKA_TOPIC_PREFIX;
  const operationsTopic = `${topicPrefix}.${TOPICS.operations}`;

  const conn = await connectMongo(cfg.mongodbUri);
  stops.push(() => conn.close());
  const bus = createKafkaEventBus({ brokers: cfg.kafkaBrokers, clientId: `platform-${role.kind}` });
  stops.push(() => bus.close());

  const features = { publisherEnabled: cfg.PUBLISHER_ENABLED };
  const simulated = new SimulatedInfrastructure(cfg.SIMULATED_STEP_DELAY_MS);
  // Writes in this process nudge the engine and its relay at once; the idle scans only pick up
  // expired leases, due retries and other processes' work, and each is a collection scan on the
  // wire server (it ignores non-unique indexes): once a second keeps an idle platform quiet.
  const engine = new OperationEngine({
    conn,
    bus,
    topic: operationsTopic,
    leaseMs: opts.leaseMs,
    pollMs: IDLE_SCAN_MS,
    relayIntervalMs: IDLE_SCAN_MS,
  });
  const identity = new IdentityService(conn);
  const nodes = new ConnectedNodes(conn);
  const publisher = new PublisherService({
    conn,
    identity,
    engine,
    nodes,
    sitesDomain: cfg.SITES_DOMAIN,
    features,
    infra: simulated,
  });
  const services: AreaServices = { identity, publisher };
  await ensureIndexes(conn);

  const runsSubgraph = (name: string) => role.kind === 'all' || (role.kind === 'subgraph' && role.name === name);
  const subgraphs = await Promise.all(SUBGRAPHS.filter((s) => runsSubgraph(s.name)).map((s) => s.build(services)));

  const workers = opts.workers ?? runsSubgraph('publisher');
  if (workers) {
    engine.start();
    stops.push(() => engine.stop());
    // Idempotency keys past their 24 h retention are purged by a timer (no TTL indexes here).
    const stopPurge = new IdempotencyStore(conn).startPurge(log);
    stops.push(async () => stopPurge());
  }

  const subgraphUrls: Record<string, string> = {};
  const serveSubgraphs = opts.serveSubgraphs ?? role.kind !== 'router';
  if (serveSubgraphs && role.kind !== 'router' && role.kind !== 'bridge') {
    const base = opts.subgraphBasePort ?? cfg.SUBGRAPH_BASE_PORT;
    for (const s of subgraphs) {
      const server: RunningServer = await serveSubgraph(s, {
        host: cfg.HOST,
        port: base === 0 ? 0 : subgraphPort(s.name, base),
        log,
      });
      subgraphUrls[s.name] = server.url;
      stops.push(() => server.close());
    }
  }

  let router: Router | undefined;
  let routerUrl: string | undefined;
  if (role.kind === 'all' || role.kind === 'router') {
    const feed = new OperationFeed(bus, log, operationsTopic);
    await feed.start();
    stops.push(() => feed.stop());
    const remoteUrls = Object.fromEntries(
      SUBGRAPHS.map((s) => [
        s.name,
        process.env[`SUBGRAPH_URL_${s.name.toUpperCase()}`] ??
          `http://${cfg.HOST}:${subgraphPort(s.name, cfg.SUBGRAPH_BASE_PORT)}/graphql`,
      ]),
    );
    router = new Router({
      supergraphSdl: await readSupergraph(),
      local: role.kind === 'all' ? subgraphs : [],
      remoteUrls,
      authenticate: (key) => identity.authenticate(key),
      canAccessProject: (p, projectId) => identity.canAccessProject(p, projectId),
      feed,
      log,
    });
    await router.start();
    routerUrl = await router.listen(cfg.HOST, opts.routerPort ?? cfg.ROUTER_PORT);
    const r = router;
    stops.push(() => r.stop());
  }

  let bridgeUrl: string | undefined;
  if (role.kind === 'all' || role.kind === 'bridge') {
    const executor = router
      ? inProcessExecutor(router)
      : httpExecutor(process.env.ROUTER_URL ?? `http://${cfg.HOST}:${cfg.ROUTER_PORT}/graphql`);
    const bridge: FastifyInstance = await buildBridge({
      executor,
      log,
      ready: async () => {
        const mongo = mongoHostPort(cfg.mongodbUri);
        const kafka = brokerHostPort(cfg.kafkaBrokers[0]);
        const [mongoOk, kafkaOk] = await Promise.all([
          // A mongodb+srv URI cannot be probed by TCP: the driver's own connection stands for it.
          mongo ? portAnswers(mongo.port, mongo.host, READY_PROBE_MS) : conn.readyState === 1,
          portAnswers(kafka.port, kafka.host, READY_PROBE_MS),
        ]);
        return { mongodb: mongoOk ? 'ok' : 'unreachable', kafka: kafkaOk ? 'ok' : 'unreachable' };
      },
    });
    bridgeUrl = await bridge.listen({ host: cfg.HOST, port: opts.bridgePort ?? cfg.BRIDGE_PORT });
    stops.push(() => bridge.close());
  }

  log.info({ bridgeUrl, routerUrl, subgraphUrls, workers }, 'platform started');
  return {
    conn,
    bus,
    services,
    engine,
    simulated,
    features,
    bridgeUrl,
    routerUrl,
    subgraphUrls,
    subgraphs,
    async stop() {
      for (const stop of stops.reverse()) {
        await stop().catch((err) => log.warn({ err }, 'error while stopping'));
      }
    },
  };
}
