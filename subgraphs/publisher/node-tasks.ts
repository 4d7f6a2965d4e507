import mongoose, { type Connection, type Model } from 'mongoose';
import { EventEmitter } from 'node:events';
import { PlatformError, retriable } from '../../core/errors';
import { model } from '../../core/mongo';
import { type AgentSite, isMachineStep } from '../../dataplane/agent/wire';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { PublisherModels, SiteDoc } from './model';
import { type ConnectedNodes, HOSTED_NODE_ID, NODE_SILENT_MS, nodeAgentAlive } from './nodes';
import { findRuntime, runtimeSpec, stepRelease } from './runtime-catalog';
import type { Infrastructure, StepExtras, StepOutput } from './simulated-infrastructure';

/**
 * The work of connected nodes (docs/decisions/0170-node-agent.md). The operation engine runs a
 * connected-node site's operation on the platform as for any site (locks, fencing, retries, the
 * operation record); each step that acts on the machine becomes a node task, which the node's
 * agent claims over the API, runs with its local data plane and reports back. While the agent is
 * silent the step waits (its detail reads `waiting_for_node: …`) and fails with
 * `node_unreachable` after the wait deadline (PUBLISHER_NODE_WAIT_MS, default 10 min).
 */

export type NodeTaskStatus = 'pending' | 'claimed' | 'succeeded' | 'failed';

export interface NodeTaskDoc {
  /** `<operation id>:<step>`: one task per step of an operation. */
  _id: string;
  /** The operation's attempt that (re)opened the task. */
  attempt: number;
  nodeId: string;
  siteId: string;
  operationId: string;
  operationType: string;
  step: string;
  site: AgentSite;
  status: NodeTaskStatus;
  /** The agent process (a random id per start) that claimed it; another process may take it over. */
  claimedBy: string | null;
  claimedAt: Date | null;
  progress: string | null;
  result: Record<string, unknown> | null;
  error: { code: string; message: string; retriable: boolean } | null;
  createdAt: Date;
  finishedAt: Date | null;
  /** How many times an agent process claimed it (more than 1: a takeover of an interrupted run). */
  claims?: number;
}

const taskSchema = new mongoose.Schema<NodeTaskDoc>(
  {
    _id: String,
    nodeId: { type: String, required: true },
    siteId: { type: String, required: true },
    operationId: { type: String, required: true },
    operationType: { type: String, required: true },
    step: { type: String, required: true },
    attempt: { type: Number, default: 1 },
    site: { type: mongoose.Schema.Types.Mixed, required: true },
    status: { type: String, required: true },
    claimedBy: { type: String, default: null },
    claimedAt: { type: Date, default: null },
    progress: { type: String, default: null },
    result: { type: mongoose.Schema.Types.Mixed, default: null },
    error: { type: mongoose.Schema.Types.Mixed, default: null },
    createdAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
    claims: { type: Number, default: 0 },
  },
  { collection: 'publisher_node_tasks', versionKey: false },
);
taskSchema.index({ nodeId: 1, status: 1, createdAt: 1 });

export function nodeTaskModel(conn: Connection): Model<NodeTaskDoc> {
  return model(conn, 'publisher', 'NodeTask', taskSchema);
}

/**
 * Tasks opened in this process wake the claims waiting here at once (the hosted agent's long poll
 * runs in the same process as the operation engine); a claim in another process reads again every
 * second (node-agent-api.ts).
 */
const opened = new EventEmitter();
opened.setMaxListeners(0);

/** Resolves when a task of `nodeId` is opened in this process, after `ms`, or when `signal` aborts. */
export function waitForNodeTask(nodeId: string, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      opened.off(nodeId, done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    opened.once(nodeId, done);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A task's outcome recorded in this process: the step waiting on it reads it at once. */
export function nodeTaskSettled(taskId: string): void {
  opened.emit(`settled:${taskId}`);
}

/** Steps that move data the real executor does not handle yet: no node work either (0120, "still to do"). */
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

/**
 * Result fields that carry a secret: `configure_site`'s `admin_api_key` and `owner_password`, and
 * any field an agent names `…key`, `…password`, `…secret` or `…token`. The task record never holds
 * them in clear: they are sealed with the platform's key as the outcome is recorded
 * (docs/decisions/0270-node-tokens-and-task-secrets.md) and opened by the step that reads them.
 */
const SECRET_RESULT_FIELD = /(^|_)(key|password|secret|token)$/i;
/** Lists the fields of a stored result that are sealed. */
const SEALED_FIELDS = '_sealed';
const resultAad = (taskId: string, field: string) => `publisher_node_tasks:${taskId}:result.${field}`;

/** A task's result as the record stores it: every secret field sealed for this task and field. */
export function sealTaskResult(taskId: string, result: Record<string, unknown> | null | undefined) {
  if (!result) return null;
  const out: Record<string, unknown> = {};
  const sealed: string[] = [];
  for (const [field, value] of Object.entries(result)) {
    if (field === SEALED_FIELDS) continue;
    if (SECRET_RESULT_FIELD.test(field) && value !== null && value !== undefined) {
      out[field] = encryptSecret(JSON.stringify(value), resultAad(taskId, field));
      sealed.push(field);
    } else out[field] = value;
  }
  if (sealed.length) out[SEALED_FIELDS] = sealed;
  return out;
}

/** The result the agent reported, its sealed fields opened (for the step on the platform that waits for it). */
export function openTaskResult(taskId: string, stored: Record<string, unknown> | null): Record<string, unknown> | null {
  if (!stored) return null;
  const { [SEALED_FIELDS]: sealed, ...out } = stored;
  for (const field of Array.isArray(sealed) ? (sealed as string[]) : []) {
    if (typeof out[field] === 'string') out[field] = JSON.parse(decryptSecret(out[field], resultAad(taskId, field)));
  }
  return out;
}

/**
 * Deletes the tasks that finished more than `retentionMs` before `now`, except those of an
 * operation still running (a resumed step reads its finished task instead of running it again).
 * Run periodically (`publisher-node-task-sweep`); answers how many went.
 */
export async function sweepFinishedNodeTasks(
  tasks: Model<NodeTaskDoc>,
  retentionMs: number,
  operationRunning: (operationId: string) => Promise<boolean>,
  now = Date.now(),
): Promise<number> {
  const old = await tasks
    .find({ status: { $in: ['succeeded', 'failed'] }, finishedAt: { $lt: new Date(now - retentionMs) } }, { operationId: 1 })
    .lean();
  const running = new Map<string, boolean>();
  const ids: string[] = [];
  for (const t of old) {
    if (!running.has(t.operationId)) running.set(t.operationId, await operationRunning(t.operationId));
    if (!running.get(t.operationId)) ids.push(t._id);
  }
  if (ids.length === 0) return 0;
  return (await tasks.deleteMany({ _id: { $in: ids }, status: { $in: ['succeeded', 'failed'] } })).deletedCount;
}

/** What a node step may take once the agent has it: a cold runtime install builds native modules. */
const NODE_STEP_MS = 45 * 60_000;
const POLL_MS = 250;

export interface NodeRoutingDeps {
  models: PublisherModels;
  nodes: ConnectedNodes;
  tasks: Model<NodeTaskDoc>;
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
    const onHostedNode = Boolean(site && !connected && this.d.hostedNode && isMachineStep(step));
    if (!op || !site || (!connected && !onHostedNode)) {
      return this.d.hosted.perform(operationType, step, signal, op, idempotencyToken, extras);
    }
    const nodeId = onHostedNode ? HOSTED_NODE_ID : site.targetNodeId!;
    if (DATA_STEPS.has(step)) return;
    if (step === 'configure_site' && (await this.d.configured?.(site._id))) return;
    const version = await stepRelease(this.d.models, operationType, step, site, op.input);
    if (onHostedNode) await this.d.hostedNode?.before?.(operationType, step, site, version);
    // One task per step of the operation: a resumed attempt (a lost lease) waits on the same task,
    // a retry after a failed one puts it back to pending, a finished one answers its outcome.
    const id = `${op._id}:${step}`;
    const attempt = op.attempt ?? 1;
    await this.d.tasks.updateOne(
      { _id: id },
      {
        $setOnInsert: {
          nodeId,
          siteId: site._id,
          operationId: op._id,
          operationType,
          step,
          site: nodeSiteSpec(site, version),
          attempt,
          status: 'pending',
          claimedBy: null,
          claimedAt: null,
          progress: null,
          result: null,
          error: null,
          createdAt: new Date(),
          finishedAt: null,
        },
      },
      { upsert: true },
    );
    await this.d.tasks.updateOne(
      { _id: id, status: 'failed', attempt: { $lt: attempt } },
      {
        $set: {
          attempt,
          status: 'pending',
          site: nodeSiteSpec(site, version),
          claimedBy: null,
          claimedAt: null,
          error: null,
          createdAt: new Date(),
          finishedAt: null,
        },
      },
    );
    opened.emit(nodeId);
    const result = await this.await(id, nodeId, signal, extras);
    if (step === 'configure_site' && result) await this.d.onConfigured?.(site, result);
    if (onHostedNode) await this.d.hostedNode?.after?.(step, site._id);
    if (step === 'delete_site') await this.d.onDeleted?.(site._id);
  }

  /**
   * Waits for the task's outcome. While the node is unreachable the step's detail says so; the wait
   * is bounded by `waitMs` from the moment the node became unreachable (or the task was opened, if
   * later): durable times, so a resumed attempt does not start the wait over.
   */
  private async await(id: string, nodeId: string, signal: AbortSignal | undefined, extras: StepExtras) {
    let lastProgress: string | null = null;
    for (;;) {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      const task = await this.d.tasks.findById(id).lean();
      if (!task) throw new PlatformError('node_task_lost', 500, `node task ${id} disappeared`);
      if (task.status === 'succeeded') return openTaskResult(task._id, task.result);
      if (task.status === 'failed') {
        const err = task.error ?? { code: 'node_step_failed', message: 'the node reported a failure', retriable: false };
        throw err.retriable ? retriable(err.code, err.message) : new PlatformError(err.code, 500, err.message);
      }
      const node = await this.d.nodes.get(nodeId);
      if (!node) throw new PlatformError('unknown_node', 500, `node ${nodeId} no longer exists`);
      if (nodeAgentAlive(node)) {
        if (task.progress && task.progress !== lastProgress) extras.progress?.((lastProgress = task.progress));
      } else {
        const since = node.lastHeartbeatAt ? node.lastHeartbeatAt.toISOString() : 'never connected';
        extras.progress?.(`waiting_for_node: node ${nodeId} is unreachable (last heartbeat: ${since})`);
        const unreachableFrom = Math.max(
          task.createdAt.getTime(),
          node.lastHeartbeatAt ? node.lastHeartbeatAt.getTime() + NODE_SILENT_MS : 0,
        );
        if (Date.now() - unreachableFrom >= this.d.waitMs) {
          await this.d.tasks.updateOne(
            { _id: id, status: { $in: ['pending', 'claimed'] } },
            {
              $set: {
                status: 'failed',
                finishedAt: new Date(),
                error: { code: 'node_unreachable', message: 'the node stayed unreachable', retriable: false },
              },
            },
          );
          throw new PlatformError(
            'node_unreachable',
            409,
            `node ${nodeId} stayed unreachable for ${Math.round(this.d.waitMs / 1000)} s; the step was not run`,
          );
        }
      }
      // Woken at once by an outcome recorded in this process (the hosted agent's), else read again.
      await waitForNodeTask(`settled:${id}`, POLL_MS, signal);
    }
  }
}

/** The site as an agent runs it: its addresses and the exact release. */
export function nodeSiteSpec(site: SiteDoc, version: string = site.runtimeVersion): AgentSite {
  const runtime = findRuntime(version);
  if (!runtime) throw new PlatformError('release_unknown', 500, `runtime ${version} is not in the catalog`);
  const hosts = [new URL(site.siteUrl).hostname];
  if (site.domain && site.domainStatus === 'active') hosts.push(site.domain);
  return { siteId: site._id, slug: site.slug, name: site.name, url: site.siteUrl, hosts, runtime: runtimeSpec(runtime) };
}
