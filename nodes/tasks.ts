import mongoose, { type Connection, type Model } from 'mongoose';
import { EventEmitter } from 'node:events';
import { PlatformError, retriable } from '../core/errors';
import { model } from '../core/mongo';
import { decryptSecret, encryptSecret } from '../core/secrets';
import type { AgentSite, ReleaseWork, SiteDataWork } from '../dataplane/agent/wire';
import { type ConnectedNodes, HOSTED_NODE_ID, NODE_SILENT_MS, nodeAgentAlive } from './registry';

/**
 * Node tasks (docs/decisions/0170-node-agent.md, 0325-nodes-module.md): a step that acts on a
 * machine is written here as a task of the machine's node; the node's agent claims it over the
 * agent protocol (agent-api.ts), runs it with its executor and reports the outcome, which the step
 * on the platform waits for. Any area opens tasks through `NodeTasks`; the publishing area's
 * operations are the first (subgraphs/publisher/node-tasks.ts). While the agent is silent a step
 * waits (its detail reads `waiting_for_node: …`) and fails with `node_unreachable` after the wait
 * deadline (PUBLISHER_NODE_WAIT_MS, default 10 min).
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
  /** A site's step: the site as the agent runs it. */
  site?: AgentSite;
  /** A site's data step (docs/decisions/0360-data-steps-on-the-node.md): the point's parts, the release, a copy's re-keying. */
  data?: SiteDataWork;
  /** A commerce release's step (docs/decisions/0325-nodes-module.md): which releases, ids only. */
  release?: ReleaseWork;
  /** A capture's parts its node uploaded (SHA-256; docs/decisions/0375): its result must name one. */
  uploaded?: string[];
  /**
   * A capture's upload under way (docs/decisions/0390-resumable-part-transfers.md): which part, its
   * whole length, and the bytes the platform holds of it (whole pieces), where a broken upload resumes.
   */
  partUpload?: { sha256: string; length: number; held: number };
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
    site: { type: mongoose.Schema.Types.Mixed, default: undefined },
    data: { type: mongoose.Schema.Types.Mixed, default: undefined },
    release: { type: mongoose.Schema.Types.Mixed, default: undefined },
    uploaded: { type: [String], default: undefined },
    partUpload: { type: mongoose.Schema.Types.Mixed, default: undefined },
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
 * second (agent-api.ts).
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

/**
 * What a task is opened with: its id (`<operation id>:<step>`, one task per step of an operation), what
 * the step acts on (a site or commerce releases) and the operation's attempt (a retry after a failed
 * task puts it back to pending).
 */
export type NodeTaskRequest = { id: string } & Pick<
  NodeTaskDoc,
  'nodeId' | 'siteId' | 'operationId' | 'operationType' | 'step' | 'site' | 'data' | 'release' | 'attempt'
>;

const POLL_MS = 250;
/** How long a step waits for an unreachable node unless its area says otherwise (PUBLISHER_NODE_WAIT_MS's default). */
export const DEFAULT_NODE_WAIT_MS = 10 * 60_000;

/** Opens node tasks and waits for their outcomes (the platform's side of every machine step). */
export class NodeTasks {
  constructor(
    private readonly d: {
      tasks: Model<NodeTaskDoc>;
      nodes: ConnectedNodes;
      /** How long a step waits for an unreachable node before it fails with `node_unreachable`. */
      waitMs: number;
    },
  ) {}

  /**
   * Opens the task (a resumed attempt, after a lost lease, finds the same task; a retry after a failed
   * one puts it back to pending; a finished one keeps its outcome), wakes the node's claims waiting in
   * this process and answers the outcome: the result with its sealed fields opened, or the failure
   * thrown as the agent reported it.
   */
  async run(
    t: NodeTaskRequest,
    signal?: AbortSignal,
    progress?: (detail: string) => void,
  ): Promise<Record<string, unknown> | null> {
    const { id, attempt, ...given } = t;
    const fields = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
    await this.d.tasks.updateOne(
      { _id: id },
      {
        $setOnInsert: {
          ...fields,
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
          ...(t.site ? { site: t.site } : {}),
          ...(t.data ? { data: t.data } : {}),
          ...(t.release ? { release: t.release } : {}),
          claimedBy: null,
          claimedAt: null,
          error: null,
          createdAt: new Date(),
          finishedAt: null,
        },
      },
    );
    opened.emit(t.nodeId);
    return this.outcome(id, t.nodeId, signal, progress);
  }

  /**
   * Waits for the task's outcome. While the node is unreachable the step's detail says so; the wait
   * is bounded by `waitMs` from the moment the node became unreachable (or the task was opened, if
   * later): durable times, so a resumed attempt does not start the wait over.
   */
  private async outcome(id: string, nodeId: string, signal: AbortSignal | undefined, progress?: (detail: string) => void) {
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
      // The hosted node's record is made by its agent's first start: until then it waits as unreachable.
      const node =
        (await this.d.nodes.get(nodeId)) ?? (nodeId === HOSTED_NODE_ID ? { lastHeartbeatAt: null as Date | null } : null);
      if (!node) throw new PlatformError('unknown_node', 500, `node ${nodeId} no longer exists`);
      if (nodeAgentAlive(node)) {
        if (task.progress && task.progress !== lastProgress) progress?.((lastProgress = task.progress));
      } else {
        const since = node.lastHeartbeatAt ? node.lastHeartbeatAt.toISOString() : 'never connected';
        progress?.(`waiting_for_node: node ${nodeId} is unreachable (last heartbeat: ${since})`);
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
