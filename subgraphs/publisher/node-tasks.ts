import { PlatformError } from '../../core/errors';
import { type AgentSite, isMachineStep, isSiteDataStep, type SiteDataWork } from '../../dataplane/agent/wire';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import type { NodeTasks } from '../../nodes/tasks';
import type { PublisherModels, SiteDoc } from './model';
import { findRuntime, runtimeSpec, stepRelease } from './runtime-catalog';
import type { Infrastructure, StepExtras, StepOutput } from './simulated-infrastructure';

/**
 * A site's machine steps as node tasks (docs/decisions/0170-node-agent.md). The operation engine
 * runs a connected-node site's operation on the platform as for any site (locks, fencing, retries,
 * the operation record); each step that acts on the machine becomes a task of the site's node
 * (nodes/tasks.ts), which the node's agent claims over the API, runs with its local data plane and
 * reports back; with the real executor a hosted site's steps, its data steps too (0360), are tasks of
 * the hosted node.
 */

/**
 * Steps with no work on a connected node: its recovery points hold no bytes (its agent has no
 * recovery store), its database and volume come into being at the first start.
 */
const DATA_STEPS = new Set([
  'allocate_database',
  'create_volume',
  'capture_database',
  'capture_content',
  'capture_release',
  'restore_database',
  'restore_content',
  'migrate_database',
  'pin_release',
]);

/** What a node step may take once the agent has it: a cold runtime install builds native modules. */
const NODE_STEP_MS = 45 * 60_000;

export interface NodeRoutingDeps {
  models: PublisherModels;
  /** Where a step's task is opened and its outcome awaited. */
  tasks: NodeTasks;
  /** The executor of hosted sites. */
  hosted: Infrastructure;
  /** How long a step waits for an unreachable node before it fails with `node_unreachable`. */
  waitMs: number;
  /** Stores what `configure_site` on a node returned (the site's admin access, sealed). */
  onConfigured?: (site: SiteDoc, result: Record<string, unknown>) => Promise<void>;
  /** Whether the site's admin access is stored already (a configured site is not set up twice). */
  configured?: (siteId: string) => Promise<boolean>;
  /** After `delete_site` on a node: what the platform keeps of the site (its sealed admin access) goes. */
  onDeleted?: (siteId: string) => Promise<void>;
  /**
   * The hosted pool as a node (docs/decisions/0225-hosted-pool-node.md): a hosted site's machine
   * steps become tasks of HOSTED_NODE_ID; `before` runs first on the platform (the real
   * executor's injected faults). Unset: hosted sites run on `hosted` in this process.
   */
  hostedNode?: {
    before?: (operationType: string, step: string, site: SiteDoc, version: string) => Promise<void>;
    /** Runs on the platform once the hosted node finished the step (a deleted site's MySQL database goes). */
    after?: (step: string, siteId: string) => Promise<void>;
    /**
     * A hosted site's data steps as tasks of the hosted node (docs/decisions/0360): what the task asks
     * for, and what the platform keeps of the answer. Unset: the hosted executor runs them.
     */
    data?: {
      work(operationType: string, step: string, site: SiteDoc, input: unknown): Promise<SiteDataWork>;
      settle(
        operationType: string,
        step: string,
        site: SiteDoc,
        input: unknown,
        result: Record<string, unknown> | null,
      ): Promise<StepOutput | void>;
    };
  };
}

/** Sends a connected-node site's steps to its node; every other site's to the hosted executor. */
export class NodeRoutedInfrastructure implements Infrastructure {
  constructor(private readonly d: NodeRoutingDeps) {}

  get kind() {
    return this.d.hosted.kind;
  }

  stepTimeoutMs(step: string): number | undefined {
    // The engine cannot tell a node's step from a hosted one here: the longer of the two deadlines.
    return Math.max(this.d.hosted.stepTimeoutMs?.(step) ?? 0, this.d.waitMs + NODE_STEP_MS);
  }

  async perform(
    operationType: string,
    step: string,
    signal?: AbortSignal,
    op?: { _id: string; projectId: string; resourceId?: string; input?: unknown; attempt?: number },
    idempotencyToken?: string,
    extras: StepExtras = {},
  ): Promise<void | StepOutput> {
    const siteId = extras.siteId ?? op?.resourceId ?? op?.projectId;
    const site = op && siteId ? await this.d.models.Site.findById(siteId).lean() : null;
    const connected = site?.deploymentMode === 'connected_node' && site.targetNodeId;
    const data = !connected && isSiteDataStep(step) ? this.d.hostedNode?.data : undefined;
    const onHostedNode = Boolean(site && !connected && this.d.hostedNode && (isMachineStep(step) || data));
    if (!op || !site || (!connected && !onHostedNode)) {
      return this.d.hosted.perform(operationType, step, signal, op, idempotencyToken, extras);
    }
    const nodeId = onHostedNode ? HOSTED_NODE_ID : site.targetNodeId!;
    if (connected && DATA_STEPS.has(step)) return;
    if (step === 'configure_site' && (await this.d.configured?.(site._id))) return;
    const version = await stepRelease(this.d.models, operationType, step, site, op.input);
    if (onHostedNode) await this.d.hostedNode?.before?.(operationType, step, site, version);
    const work = data ? await data.work(operationType, step, site, op.input) : undefined;
    // A capture reads the site as it runs now (an upgrade captures before it changes the release).
    const runs = step.startsWith('capture_') ? site.runtimeVersion : version;
    // One task per step of the operation: a resumed attempt (a lost lease) waits on the same task,
    // a retry after a failed one puts it back to pending, a finished one answers its outcome.
    const result = await this.d.tasks.run(
      {
        id: `${op._id}:${step}`,
        nodeId,
        siteId: site._id,
        operationId: op._id,
        operationType,
        step,
        site: nodeSiteSpec(site, runs),
        ...(work ? { data: work } : {}),
        attempt: op.attempt ?? 1,
      },
      signal,
      extras.progress,
    );
    if (step === 'configure_site' && result) await this.d.onConfigured?.(site, result);
    if (onHostedNode) await this.d.hostedNode?.after?.(step, site._id);
    if (step === 'delete_site') await this.d.onDeleted?.(site._id);
    if (data) return data.settle(operationType, step, site, op.input, result);
  }
}

/** The site as an agent runs it: its addresses and the exact release. */
export function nodeSiteSpec(site: SiteDoc, version: string = site.runtimeVersion): AgentSite {
  const runtime = findRuntime(version);
  if (!runtime) throw new PlatformError('release_unknown', 500, `runtime ${version} is not in the catalog`);
  const hosts = [new URL(site.siteUrl).hostname];
  if (site.domain && site.domainStatus === 'active') hosts.push(site.domain);
  return {
    siteId: site._id,
    slug: site.slug,
    name: site.name,
    url: site.siteUrl,
    hosts,
    runtime: runtimeSpec(runtime),
    sleeps: site.sleepsWhenIdle !== false,
  };
}
