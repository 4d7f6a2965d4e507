process.env.APOLLO_TELEMETRY_DISABLED ??= '1';

import type { FastifyInstance } from 'fastify';
import type { BackgroundWorker } from '../core/area';
import { hostname } from 'node:os';
import type { Connection } from 'mongoose';
import { brokerHostPort, mongoHostPort } from '../core/addresses';
import { type Config, config as processConfig } from '../core/config';
import { IdempotencyStore } from '../core/idempotency';
import { MissingKeyError, productionKeyProblems } from '../core/keys';
import type { EventBus } from '../core/events/event-bus';
import { createKafkaEventBus } from '../core/events/kafka-event-bus';
import { TOPICS } from '../core/events/topics';
import Fastify from 'fastify';
import { portAnswers } from '../infra/tools';
import { closeListener } from '../core/http-close';
import { installAccessLog } from '../core/access-log';
import { installMetricsRoute } from '../core/telemetry/http';
import { childLogger } from '../core/logger';
import { connectMongo, ensureIndexes } from '../core/mongo';
import { OperationEngine } from '../core/operations/engine';
import { serveSubgraph, type RunningServer } from '../core/subgraph-server';
import type { BuiltSubgraph } from '../core/subgraph-kit';
import { httpExecutor } from '../contract/graphql-executor';
import { inProcessExecutor } from '../router/executor';
import { buildBridge } from '../rest-bridge/server';
import { ConsoleSessions } from '../core/console-sessions';
import { readSupergraph } from '../router/compose';
import type { Ports } from '../core/ports';
import type { Subscription } from '../core/events/event-bus';
import { FeedHub, feedGroupId } from '../router/feed-hub';
import { Router } from '../router/server';
import { addScrapeProbe, collectRuntimeMetrics } from '../core/telemetry/metrics';
import { platformProbe } from '../core/telemetry/probes';
import { initTracing } from '../core/telemetry/tracing';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import { DataPlane } from '../dataplane/plane';
import { edgeEngineFromEnv, edgeWakeTimeoutFromEnv } from '../dataplane/edge';
import { idleSleepMsFromEnv, siteMemoryMbFromEnv } from '../dataplane/sleep';
import { ensureNginxInstalled, nginxBinary } from '../infra/nginx';
import { hostedNodeWorker } from '../nodes/hosted';
import { BackgroundJoin } from './background-join';
import {
  type AreaServices,
  areaFeeds,
  areaByteRoutes,
  areaRoutes,
  areas,
  buildAreas,
  buildSubgraphs,
  productionProblems,
  subgraphPort,
} from './areas';

/** Idle scan interval of the operation engine and the outbox relay: 1 s. */
const IDLE_SCAN_MS = 1000;
/** How long start waits for the router's feed, area consumers and workers to join Kafka before going on without them: 10 s. */
const FEED_JOIN_WAIT_MS = 10_000;
/** How long /readyz waits for an engine's port: 1.5 s. */
const READY_PROBE_MS = 1500;

/** Which pieces this process runs: everything, or one piece as docker-compose does. */
export type ProcessRole = { kind: 'all' } | { kind: 'router' } | { kind: 'bridge' } | { kind: 'subgraph'; name: string };

export interface PlatformOptions {
  role?: ProcessRole;
  config?: Config;
  /** Ports: 0 picks a free one (tests). */
  bridgePort?: number;
  routerPort?: number;
  /** Serve each subgraph over HTTP on its own port too (default: true for `all`). */
  serveSubgraphs?: boolean;
  subgraphBasePort?: number;
  /** Kafka topic prefix (tests use a unique one). */
  topicPrefix?: string;
  /** Run an area's executors, consumers and background workers here (default: where its subgraph runs). */
  workers?: boolean;
  leaseMs?: number;
  /** The {cdn_url} listener's port: 0 picks a free one (tests). */
  cdnPort?: number;
  /** The supergraph to serve (default: the committed schema/supergraph.graphql). */
  supergraphSdl?: string;
  /** The edge's port (`EDGE_PORT`): 0 picks a free one (tests). */
  edgePort?: number;
  /** Run the data plane (edge, supervisor, site host) here (default: where the publishing area's workers run). */
  dataPlane?: boolean;
  /** Start the local stand-ins of outside systems whose env variable is unset (default: for `all`). */
  standIns?: boolean;
}

export interface Platform {
  conn: Connection;
  bus: EventBus;
  config: Config;
  services: AreaServices;
  ports: Ports;
  engine: OperationEngine;
  bridgeUrl?: string;
  routerUrl?: string;
  cdnUrl?: string;
  /** The edge's address, where this process runs the data plane. */
  edgeUrl?: string;
  dataPlane?: DataPlane;
  subgraphUrls: Record<string, string>;
  subgraphs: BuiltSubgraph[];
  stop(): Promise<void>;
}

/**
 * A production start refused for its configuration: one sentence per missing or refused variable
 * (the platform's keys, then the outside systems and their secrets), all in one message joined by `; `.
 */
export class ProductionConfigError extends Error {}

/**
 * The configuration a start runs with. In production nothing starts while a variable is missing,
 * and every missing one is named at once: a key the configuration refused is reported together
 * with the outside systems left unnamed, so a fresh deployment is fixed in one round.
 */
function startConfig(given: Config | undefined): Config {
  let cfg: Config;
  try {
    cfg = given ?? processConfig();
  } catch (e) {
    if (!(e instanceof MissingKeyError) || process.env.NODE_ENV !== 'production') throw e;
    throw new ProductionConfigError([...productionKeyProblems(process.env), ...productionProblems(process.env)].join('; '));
  }
  const problems = cfg.NODE_ENV === 'production' ? productionProblems(cfg.env) : [];
  if (problems.length > 0) throw new ProductionConfigError(problems.join('; '));
  return cfg;
}

/** Starts the platform (or one piece of it) against the configured MongoDB and Kafka. */
export async function startPlatform(opts: PlatformOptions = {}): Promise<Platform> {
  // No development secret and no stand-in in production: refuse before anything starts.
  const cfg = startConfig(opts.config);
  const production = cfg.NODE_ENV === 'production';
  const role: ProcessRole = opts.role ?? { kind: 'all' };
  const log = childLogger('platform', { role: role.kind === 'subgraph' ? `subgraph:${role.name}` : role.kind });
  const stops: Array<() => Promise<void>> = [];
  const topicPrefix = opts.topicPrefix ?? cfg.KAFKA_TOPIC_PREFIX;
  const operationsTopic = `${topicPrefix}.${TOPICS.operations}`;
  // Before any listener or client starts: spans export only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
  initTracing();
  collectRuntimeMetrics();

  const conn = await connectMongo(cfg.mongodbUri);
  stops.push(() => conn.close());
  const bus = createKafkaEventBus({ brokers: cfg.kafkaBrokers, clientId: `platform-${role.kind}` });
  stops.push(() => bus.close());

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

  // Stand-ins for outside systems come first: the areas read their addresses from the settings.
  if (!production && (opts.standIns ?? role.kind === 'all')) {
    for (const standIn of areas().flatMap((a) => a.standIns ?? [])) {
      if (cfg.env[standIn.env]) continue;
      const running = await standIn.start({ config: cfg, log: childLogger(`standin:${standIn.name}`), host: cfg.HOST });
      cfg.env[standIn.env] = running.value;
      stops.push(() => running.stop());
      log.info({ standIn: standIn.name, [standIn.env]: running.value }, 'local stand-in started');
    }
  }

  const { services, ports, contexts } = buildAreas({ config: cfg, conn, bus, engine, topicPrefix });
  const runsArea = (name: string) => role.kind === 'all' || (role.kind === 'subgraph' && role.name === name);

  // The data plane runs where the publishing area's workers run (its executor drives the sites);
  // it is stopped after the engine, so no step is cut by its workloads going away.
  let dataPlane: DataPlane | undefined;
  let edgeUrl: string | undefined;
  if (opts.dataPlane ?? opts.workers ?? runsArea('publisher')) {
    // EDGE_ENGINE=nginx: nginx from the pinned Debian package (installed once); if that fails, the node engine.
    let installedNginx: string | undefined;
    if (edgeEngineFromEnv(cfg.env) === 'nginx')
      installedNginx = await ensureNginxInstalled().then(
        () => nginxBinary(),
        (err: Error) => void log.warn({ err: err.message }, 'nginx could not be installed for the edge'),
      );
    dataPlane = new DataPlane({
      env: cfg.env,
      nginxBinary: installedNginx,
      edgePort: opts.edgePort ?? cfg.EDGE_PORT,
      host: cfg.HOST,
      sitesRoot: path.resolve(projectRoot(), cfg.DATA_DIR, 'sites'),
      sitesBaseUrl: cfg.SITES_BASE_URL,
      // A failed pass runs again at the next interval; the log says why it failed.
      onReconcileError: (area, err) => log.warn({ area, err: err.message }, 'reconcile pass failed'),
      sleep: {
        idleMs: idleSleepMsFromEnv(cfg.env),
        memoryMb: siteMemoryMbFromEnv(cfg.env, true),
        log: (line) => log.warn(line),
      },
      wakeTimeoutMs: edgeWakeTimeoutFromEnv(cfg.env),
    });
    edgeUrl = await dataPlane.start();
    log.info({ edgeEngine: dataPlane.edge.engine, why: dataPlane.edgeEngine.note }, 'edge engine');
    // Which isolation hosted workloads get, chosen once here (docs/sandbox.md).
    const sb = dataPlane.sandboxing;
    if (sb.sandbox) log.info({ sandbox: 'on', bwrap: sb.sandbox.o.bwrap }, 'hosted workloads run in the tenant sandbox');
    else log.warn({ sandbox: 'off', missing: sb.missing, refused: Boolean(sb.refusal) }, 'hosted workloads have no sandbox');
    const dp = dataPlane;
    stops.push(() => dp.stop());
    ports.provide('dataPlane', dp);
    ports.provide('nodePlane', dp);
  }
  await ensureIndexes(conn);
  // Queue depths, outbox backlog and consumer lag, read when /metrics is scraped.
  const removeProbe = addScrapeProbe(platformProbe(conn, bus));
  stops.push(async () => void removeProbe());

  const subgraphs = await buildSubgraphs(services, runsArea);

  // Each area's executors, consumers and background workers run where its subgraph runs.
  const workerAreas = areas().filter((a) => opts.workers ?? runsArea(a.name));
  for (const area of workerAreas) {
    const own = (services as Record<string, unknown>)[area.name];
    for (const [type, executor] of Object.entries(area.executors?.(own) ?? {})) engine.register(type, executor);
  }
  if (workerAreas.length > 0) {
    engine.start();
    stops.push(() => engine.stop());
    // Idempotency keys past their 24 h retention are purged by a timer (no TTL indexes here).
    const stopPurge = new IdempotencyStore(conn).startPurge(log);
    stops.push(async () => stopPurge());
  }
  // Consumers and workers join Kafka without holding the platform hostage to it (docs/areas/spine.md, point 12).
  const joins = new BackgroundJoin(log);
  stops.push(() => joins.stop());
  const startWorker = (worker: BackgroundWorker) =>
    joins.add(worker.name, async () => {
      await worker.start();
      return async () => worker.stop();
    });
  for (const area of workerAreas) {
    const own = (services as Record<string, unknown>)[area.name];
    const ctx = contexts.get(area.name)!;
    for (const consumer of area.consumers?.(own, ctx) ?? []) {
      joins.add(`${area.name}.${consumer.name}`, async () => {
        await bus.ensureTopics(consumer.topics);
        const sub: Subscription = await bus.subscribe({
          groupId: `${topicPrefix}.${area.name}.${consumer.name}`,
          topics: consumer.topics,
          fromBeginning: consumer.fromBeginning ?? true,
          waitForAssignment: true,
          handler: consumer.handler,
        });
        return () => sub.stop();
      });
    }
    for (const worker of area.workers?.(own, ctx) ?? []) startWorker(worker);
  }
  // The hosted pool as a node (nodes/hosted.ts), where this process runs the data plane and the publishing
  // area's workers: the area describes it (the `hostedNode` port), the composition root starts its agent
  // (docs/decisions/0380-hosted-agent-at-the-composition-root.md): hosted sites' steps with the real
  // executor, commerce releases' steps always (docs/decisions/0325-nodes-module.md).
  if (dataPlane && ports.has('hostedNode') && workerAreas.some((a) => a.name === 'publisher')) {
    const plane = dataPlane;
    const agentLog = childLogger('publisher');
    startWorker(
      hostedNodeWorker({
        ...ports.get('hostedNode'),
        plane: () => plane,
        releases: () => (ports.has('hostedReleases') ? ports.get('hostedReleases') : null),
        dataDir: path.resolve(cfg.DATA_DIR, 'hosted-node'),
        log: (line) => agentLog.info({ agent: 'hosted' }, line),
      }),
    );
  }
  await joins.wait(FEED_JOIN_WAIT_MS);

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
    const feeds = areaFeeds();
    const group = feedGroupId(topicPrefix, process.env.ROUTER_INSTANCE_ID, hostname(), opts.routerPort ?? cfg.ROUTER_PORT);
    const hub = new FeedHub(bus, log, feeds, topicPrefix, group);
    // Kafka down does not keep the router from serving: the feed joins in the background.
    await hub.startInBackground({ waitMs: FEED_JOIN_WAIT_MS });
    stops.push(() => hub.stop());
    const remoteUrls = Object.fromEntries(
      areas().map((s) => [
        s.name,
        process.env[`SUBGRAPH_URL_${s.name.toUpperCase()}`] ??
          `http://${cfg.HOST}:${subgraphPort(s.name, cfg.SUBGRAPH_BASE_PORT)}/graphql`,
      ]),
    );
    router = new Router({
      supergraphSdl: opts.supergraphSdl ?? (await readSupergraph()),
      local: role.kind === 'all' ? subgraphs : [],
      remoteUrls,
      authenticate: (key) => services.identity.authenticate(key),
      recheck: (key) => services.identity.authenticate(key, { fresh: true }),
      hub,
      feeds,
      ports,
      log,
      rateLimitPerMinute: cfg.RATE_LIMIT_PER_MINUTE,
      authFailuresPerMinute: cfg.AUTH_FAILURES_PER_MINUTE,
      socketLimits: {
        connectionsPerKey: cfg.GRAPHQL_WS_MAX_CONNECTIONS_PER_KEY,
        subscriptionsPerKey: cfg.GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_KEY,
      },
      trustProxy: cfg.TRUST_PROXY,
      nodeEnv: cfg.NODE_ENV,
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
    const planes = areas().flatMap((a) => {
      const plane = a.http?.bridge;
      const own = (services as Record<string, unknown>)[a.name];
      return plane ? [(app: FastifyInstance) => plane(app, own)] : [];
    });
    // Console sessions (docs/decisions/0280-console-sessions.md): its sockets go to this router, or ROUTER_URL's.
    const sessions = new ConsoleSessions(conn, (key) => services.identity.authenticate(key));
    const stopSessionPurge = sessions.startPurge(log);
    stops.push(async () => stopSessionPurge());
    const routerHttp = routerUrl ?? process.env.ROUTER_URL ?? `http://${cfg.HOST}:${cfg.ROUTER_PORT}/graphql`;
    const bridge: FastifyInstance = await buildBridge({
      console: {
        sessions,
        baseUrl: () => cfg.baseUrl,
        cdnUrl: () => cfg.cdnUrl,
        routerWsUrl: () => routerHttp.replace(/^http/, 'ws'),
      },
      executor,
      routes: areaRoutes(),
      dataPlanes: planes,
      byteRoutes: areaByteRoutes(),
      trustProxy: cfg.TRUST_PROXY,
      rateLimitPerMinute: cfg.RATE_LIMIT_PER_MINUTE,
      authFailuresPerMinute: cfg.AUTH_FAILURES_PER_MINUTE,
      authenticate: (key) => services.identity.authenticate(key),
      log,
      ready: async () => {
        const mongo = mongoHostPort(cfg.mongodbUri);
        const kafka = brokerHostPort(cfg.kafkaBrokers[0]);
        const [mongoOk, kafkaOk] = await Promise.all([
          // A mongodb+srv URI cannot be probed by TCP: the driver's own connection stands for it.
          mongo ? portAnswers(mongo.port, mongo.host, READY_PROBE_MS) : conn.readyState === 1,
          portAnswers(kafka.port, kafka.host, READY_PROBE_MS),
        ]);
        // Readiness follows MongoDB only: without Kafka requests are still served (events wait in
        // the outbox), so Kafka down is reported as `degraded`.
        return { mongodb: mongoOk ? 'ok' : 'unreachable', kafka: kafkaOk ? 'ok' : 'degraded' };
      },
    });
    bridgeUrl = await bridge.listen({ host: cfg.HOST, port: opts.bridgePort ?? cfg.BRIDGE_PORT });
    // With a port picked at random (tests), the addresses areas hand out follow the real one.
    if (!cfg.BASE_URL) cfg.baseUrl = bridgeUrl;
    stops.push(() => closeListener(bridge));
  }

  // {cdn_url}: its own listener, for the areas that deliver bytes (Assets).
  let cdnUrl: string | undefined;
  const cdnAreas = areas().filter((a) => a.http?.cdn && runsArea(a.name));
  if (cdnAreas.length > 0) {
    const cdn = Fastify({ logger: false });
    // Like every listener: access log, traces and request metrics, and its own `/metrics`.
    installAccessLog(cdn, log, 'cdn');
    installMetricsRoute(cdn);
    for (const a of cdnAreas) {
      const own = (services as Record<string, unknown>)[a.name];
      await cdn.register(async (scope) => a.http!.cdn!(scope, own));
    }
    cdnUrl = await cdn.listen({ host: cfg.HOST, port: opts.cdnPort ?? cfg.CDN_PORT });
    if (!cfg.CDN_URL) cfg.cdnUrl = cdnUrl;
    stops.push(() => closeListener(cdn));
  }

  log.info({ bridgeUrl, routerUrl, cdnUrl, edgeUrl, subgraphUrls, workers: workerAreas.map((a) => a.name) }, 'platform started');
  return {
    conn,
    bus,
    config: cfg,
    services,
    ports,
    engine,
    bridgeUrl,
    routerUrl,
    cdnUrl,
    edgeUrl,
    dataPlane,
    subgraphUrls,
    subgraphs,
    async stop() {
      for (const stop of stops.reverse()) {
        await stop().catch((err) => log.warn({ err }, 'error while stopping'));
      }
    },
  };
}
