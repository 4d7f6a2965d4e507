import { CliUsageError, defineArea } from '../../core/area';
import { parseDnsServers, SystemDnsResolver } from '../../core/dns/resolver';
import { startDnsStandIn } from '../../core/dns/stand-in-server';
import { operationFeed } from '../../core/operations/feed';
import { periodicWorker } from '../../core/periodic-worker';
import { siteMemoryMb } from '../../dataplane/sleep';
import { backupStore } from './backup-store';
import '../../core/site-actions';
import { nodeAgentRoutes } from '../../nodes/agent-api';
import { nodeCliCommands } from './node-cli';
import { connectedNodeServices } from './node-wiring';
import { ConnectedNodes } from '../../nodes/registry';
import { ProjectSiteResolver, PublisherResolver } from './resolvers';
import { publisherByteRoutes } from './byte-routes';
import { publisherRoutes } from './routes';
import { PublisherService } from './service';
import type { PublisherServices } from './area-services';
import { publisherSettings } from './settings';
import { publisherModels, type SiteDoc } from './model';
import { RealInfrastructure } from './real-infrastructure';
import { nodeSitePower, sitePowerActivitySource, sitePowerWorker } from './site-power';
import { siteCredentialsModel } from './site-credentials';
import { isRunning } from './site-locks';
import { SiteDatabases, siteDatabaseModel } from './site-databases';
import { type Infrastructure, SimulatedInfrastructure } from './simulated-infrastructure';
import { ProjectRef } from './types';

export { PublisherService } from './service';

export type { PublisherServices } from './area-services';

/** The publishing area: runtime catalog, sites and their operations; extends `Project` with its `site`. */
export default defineArea({
  name: 'publisher',
  portOffset: 1,
  config: publisherSettings,
  services(ctx): PublisherServices {
    const features = { publisherEnabled: ctx.settings.PUBLISHER_ENABLED };
    const simulated = new SimulatedInfrastructure(ctx.settings.SIMULATED_STEP_DELAY_MS);
    const real = new RealInfrastructure({
      models: publisherModels(ctx.conn),
      credentials: siteCredentialsModel(ctx.conn),
      recoveryStore: backupStore(ctx.settings, ctx.config.DATA_DIR),
      databases: new SiteDatabases(siteDatabaseModel(ctx.conn), () => ctx.settings.PUBLISHER_MYSQL_URL),
      mailRelayUrl: () => ctx.config.env.MAIL_SMTP_URL,
    });
    // A change of the names a site is served at reaches the edge at once where this process runs the data plane.
    const kickReconcile = () => {
      if (ctx.settings.PUBLISHER_EXECUTOR === 'real' && ctx.ports.has('dataPlane'))
        void ctx.ports.get('dataPlane').reconciler.kick('publisher');
    };
    const Site = publisherModels(ctx.conn).Site;
    const nodes = new ConnectedNodes(ctx.conn, {
      liveSites: (nodeId) => Site.countDocuments({ targetNodeId: nodeId, status: { $ne: 'deleted' } }),
      hostedReports: ctx.settings.PUBLISHER_HOSTED_AGENT === 'external',
    });
    // A connected node's steps go to its agent; every other site's to the executor in force.
    const { infra, agentApi: nodeAgent } = connectedNodeServices({
      conn: ctx.conn,
      models: publisherModels(ctx.conn),
      nodes,
      credentials: siteCredentialsModel(ctx.conn),
      hosted: ctx.settings.PUBLISHER_EXECUTOR === 'real' ? real : simulated,
      waitMs: ctx.settings.PUBLISHER_NODE_WAIT_MS,
      taskRetentionMs: ctx.settings.PUBLISHER_NODE_TASK_RETENTION_MS,
      operationRunning: async (id: string) => isRunning(await ctx.engine.get(id)),
      // A connected node's sleeps and wakes, from its heartbeat, on the same topic as the hosted node's.
      siteEvents: nodeSitePower({ models: publisherModels(ctx.conn), bus: ctx.bus, topic: ctx.topic('site-power') }),
      // What agents read over the protocol (decision 0365): hosted sites' extras, commerce releases.
      hostedExtras: (siteId: string) => real.siteExtras(siteId),
      releases: () => (ctx.ports.has('hostedReleases') ? ctx.ports.get('hostedReleases') : null),
      // Recovery points' parts, read and written by the hosted node's agent through the agent API (0375).
      recoveryStore: real.backups.store,
      // With the real executor, hosted sites' machine steps are tasks of the hosted node (node-hosted.ts).
      ...(ctx.settings.PUBLISHER_EXECUTOR === 'real'
        ? {
            hostedNode: {
              before: (type: string, step: string, site: SiteDoc, version: string) =>
                real.beforeMachineStep(type, step, site, version),
              after: (step: string, siteId: string) => real.afterMachineStep(step, siteId),
              // Recovery points, restores, staging copies and rollbacks: tasks of the hosted node (0360).
              data: real.data,
              operationRunning: async (id: string) => isRunning(await ctx.engine.get(id)),
            },
          }
        : {}),
    });
    const sites = new PublisherService({
      conn: ctx.conn,
      projects: () => ctx.ports.get('projects'),
      senders: () => ctx.ports.get('senders'),
      engine: ctx.engine,
      nodes,
      sitesDomain: ctx.settings.SITES_DOMAIN,
      domains: {
        resolver: new SystemDnsResolver(parseDnsServers(ctx.settings.PUBLISHER_DNS_SERVERS)),
        claimTtlMs: ctx.settings.PUBLISHER_DOMAIN_CLAIM_TTL_MS,
        onHostsChanged: kickReconcile,
      },
      features,
      infra,
      nodeMemoryMb: siteMemoryMb(ctx.settings.PUBLISHER_NODE_MEMORY_MB, ctx.settings.PUBLISHER_EXECUTOR === 'real'),
      // Sites sleep only where they really run (the real executor's data plane keeps them).
      idleSleepMs: ctx.settings.PUBLISHER_EXECUTOR === 'real' ? ctx.settings.PUBLISHER_IDLE_SLEEP_MS : 0,
      // The supervisor of this process's data plane runs hosted sites only with the real executor.
      siteProcess: (siteId) =>
        ctx.settings.PUBLISHER_EXECUTOR === 'real' && ctx.ports.has('dataPlane')
          ? ctx.ports.get('dataPlane').sites.process(siteId)
          : null,
      // Where this process runs the data plane, a site's address follows SITES_BASE_URL and the edge's port.
      siteUrl: (slug) =>
        ctx.ports.has('dataPlane') ? ctx.ports.get('dataPlane').siteUrl(slug) : `https://${slug}.${ctx.settings.SITES_DOMAIN}`,
    });
    // The hosted node, described for the composition root, which starts its agent (the `hostedNode` port; decision 0380).
    const hostedNode = {
      nodes,
      api: nodeAgent,
      sites: ctx.settings.PUBLISHER_EXECUTOR === 'real',
      external: ctx.settings.PUBLISHER_HOSTED_AGENT === 'external',
    };
    return { sites, nodes, simulated, infra: infra as Infrastructure, real, features, nodeAgent, hostedNode };
  },
  subgraph: (s) => ({
    resolvers: [PublisherResolver, ProjectSiteResolver],
    orphanedTypes: [ProjectRef],
    createResolver: (cls) => new cls(s?.sites),
    referenceResolvers: { Project: { __resolveReference: (ref: { id: string }) => ({ id: ref.id }) } },
  }),
  provides(s, ports) {
    ports.provide('siteActions', { run: (request) => s.sites.runTrustedAction(request) });
    ports.provide('databaseScopes', { resolve: (accountId, id) => s.sites.databaseScope(accountId, id) });
    ports.provide('hostedNode', s.hostedNode);
  },
  executors: (s) => s.sites.executors(),
  workers: (s, ctx) => [
    // Finished node tasks go after PUBLISHER_NODE_TASK_RETENTION_MS (docs/decisions/0270-node-tokens-and-task-secrets.md).
    periodicWorker(
      'publisher-node-task-sweep',
      Math.min(ctx.settings.PUBLISHER_NODE_TASK_RETENTION_MS, 5 * 60_000),
      ctx.log,
      () => s.nodeAgent.sweepFinished(),
    ),
    periodicWorker('publisher-domain-checks', ctx.settings.PUBLISHER_DOMAIN_CHECK_INTERVAL_MS, ctx.log, () =>
      s.sites.verifyPendingDomains(),
    ),
    // The hosted node's sleeps and wakes, as events of the activity feeds (site-power.ts).
    sitePowerWorker({
      power: () => (s.infra.kind === 'real' && ctx.ports.has('dataPlane') ? ctx.ports.get('dataPlane').sites.power : null),
      models: publisherModels(ctx.conn),
      bus: ctx.bus,
      topic: ctx.topic('site-power'),
      log: (msg, err) => ctx.log.warn({ err: err?.message }, msg),
    }),
  ],
  activitySources: [sitePowerActivitySource],
  routes: publisherRoutes,
  byteRoutes: publisherByteRoutes,
  http: { bridge: (app, s) => nodeAgentRoutes(app, s.nodeAgent) },
  feeds: [operationFeed],
  standIns: [
    {
      // Custom-domain TXT checks, like every outside system, meet a local stand-in when no resolver
      // is named: zones from PUBLISHER_DNS_ZONE_FILE (JSON, `core/dns/stand-in-server.ts`), else none.
      name: 'publisher-dns',
      env: 'PUBLISHER_DNS_SERVERS',
      async start({ host, config }) {
        const file = config.env.PUBLISHER_DNS_ZONE_FILE;
        const server = await startDnsStandIn({ host, ...(file ? { zoneFile: file } : { zones: {} }) });
        return { value: server.address, stop: () => server.stop() };
      },
    },
  ],
  cli: [
    {
      // The operator's access to a site's admin: printed here, never served by the API or logged.
      words: ['sites', 'admin-key'],
      usage: '--project ID',
      options: { project: { type: 'string' } },
      required: ['project'],
      async run({ values, services }) {
        if (typeof values.project !== 'string') throw new CliUsageError('sites admin-key needs --project ID');
        const access = await services.real.adminAccess(values.project);
        if (!access)
          throw new CliUsageError(`no admin access is stored for project ${values.project} (not set up by the real executor)`);
        return {
          project_id: values.project,
          admin_api_url: access.adminApiUrl,
          admin_api_key: access.adminApiKey,
          owner_email: access.ownerEmail,
        };
      },
      describe: (r) => `${r.admin_api_url} ${r.admin_api_key}`,
    },
    ...nodeCliCommands,
  ],
});
