import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Model } from 'mongoose';
import { Readable } from 'node:stream';
import { type BlobStore, type ByteRange, SHA256_HEX } from '../core/blobs/blob-store';
import { RECOVERY_POINT_REGION } from '../dataplane/site-backup';
import type { z } from 'zod';
import { PlatformError, badRequest, isPlatformError, unauthenticated } from '../core/errors';
import {
  AGENT_CALLS,
  type AgentBody,
  type AgentRelease,
  type AgentUpload,
  type HeldUpload,
  isRangeRequest,
  agentBodies,
  isAgentUpload,
  isSiteDataStep,
  MAX_RECOVERY_PART_BYTES,
  type DesiredSite,
  type HeartbeatReply,
  MAX_CLAIM_WAIT_MS,
  NODE_AGENT_PATH,
  NODE_TOKEN_HEADER,
  SITE_CAPTURE_STEPS,
  type ReleaseDelivery,
  type SiteEvent,
  type SiteExtrasValue,
  type SiteProcessReport,
  type TaskOutcome,
  fromProcessReport,
} from '../dataplane/agent/wire';
import { PartUploads, partCallBody, partRange, uploadExtent } from './part-transfers';
import type { ReleaseDeliveries } from './releases';
import { type NodeTaskDoc, nodeTaskSettled, sealTaskResult, sweepFinishedNodeTasks, waitForNodeTask } from './tasks';
import {
  type ConnectedNodeDoc,
  type ConnectedNodes,
  HOSTED_HEARTBEAT_MS,
  HOSTED_LEASE_MS,
  NODE_HEARTBEAT_MS,
  NODE_SILENT_MS,
  nodeStatus,
} from './registry';

/**
 * What a node agent may do, and nothing more (docs/decisions/0170-node-agent.md): authenticated
 * by its node token, it records heartbeats, claims and reports the tasks of its own node, and
 * reads the sites placed on its node with the state each should be in. Every query is scoped to
 * the token's node: a token never reads or claims another node's work.
 */

/** How long a finished task stays in `publisher_node_tasks` unless PUBLISHER_NODE_TASK_RETENTION_MS says otherwise. */
export const DEFAULT_TASK_RETENTION_MS = 3_600_000;
/** While a claim waits, the tasks are read again this often (a task opened by another process). */
const CLAIM_RECHECK_MS = 1_000;

export class NodeAgentService {
  constructor(
    private readonly d: {
      nodes: ConnectedNodes;
      tasks: Model<NodeTaskDoc>;
      /** The sites placed on a customer's node and the state each should be in (the publishing area's records). */
      nodeSites?: (nodeId: string) => Promise<DesiredSite[]>;
      /** The hosted node's sites and the state each should be in (subgraphs/publisher/node-wiring.ts). */
      hostedSites?: () => Promise<DesiredSite[]>;
      /** How long a finished task is kept (PUBLISHER_NODE_TASK_RETENTION_MS). */
      taskRetentionMs?: number;
      /** Whether an operation is still under way (its finished tasks are kept until it ends). */
      operationRunning?: (operationId: string) => Promise<boolean>;
      /**
       * Publishes a customer's node's sleeps and wakes, those of sites placed on it only
       * (subgraphs/publisher/site-power.ts, `nodeSitePower`; docs/decisions/0350-node-power-events.md).
       */
      siteEvents?: (nodeId: string, events: SiteEvent[]) => Promise<void>;
      /**
       * What the sites' processes start with beyond their spec (docs/decisions/0365): the area answers
       * it for sites placed on `node` and refuses (404) the whole call when one is not.
       */
      siteExtras?: (node: { id: string; hosted: boolean }, siteIds: string[]) => Promise<Record<string, SiteExtrasValue>>;
      /** Commerce releases' runs and bundles (the `hostedReleases` port), where the area that owns them runs. */
      releases?: () => ReleaseDeliveries | null;
      /**
       * Where recovery points keep their bytes (`PUBLISHER_BACKUP_STORE`): a data step's parts are read and
       * written here for the node that holds the task (docs/decisions/0375).
       */
      recoveryStore?: BlobStore;
      /** The most bytes one uploaded part may have (default MAX_RECOVERY_PART_BYTES). */
      maxPartBytes?: number;
      /** The bytes of one piece of a held upload (default PART_PIECE_BYTES; decision 0390). */
      partPieceBytes?: number;
    },
  ) {}

  private partUploads?: PartUploads;

  /** Deletes finished tasks older than the retention (docs/decisions/0270-node-tokens-and-task-secrets.md). */
  async sweepFinished(now = Date.now()): Promise<number> {
    // What a finished task still holds of an upload goes first (decision 0390).
    if (this.d.recoveryStore) await this.uploads().sweep();
    return sweepFinishedNodeTasks(
      this.d.tasks,
      this.d.taskRetentionMs ?? DEFAULT_TASK_RETENTION_MS,
      this.d.operationRunning ?? (async () => false),
      now,
    );
  }

  async authenticate(token: string | undefined): Promise<ConnectedNodeDoc> {
    const node = await this.d.nodes.authenticate(token);
    if (!node) throw unauthenticated('the node token is not valid');
    return node;
  }

  /**
   * A heartbeat. On the hosted node it is also the lease (docs/decisions/0226-hosted-node-lease.md):
   * `lease` answers `held` to the agent process (`session`) that holds the node and `standby` to
   * the others, which neither claim nor run its sites until the holder's lease runs out. On a
   * customer's node the sites' processes it reports replace its last report (decision 0385; the hosted
   * node's are read in-process, so it keeps none).
   */
  async heartbeat(
    node: ConnectedNodeDoc,
    edgePort: number | null,
    session?: string,
    events: SiteEvent[] = [],
    processes?: SiteProcessReport[],
  ): Promise<HeartbeatReply> {
    if (node.hosted) {
      const held = session
        ? await this.d.nodes.leaseHeartbeat(node._id, session, edgePort, processes?.map(fromProcessReport))
        : false;
      // An agent outside the platform (PUBLISHER_HOSTED_AGENT=external) sends its sleeps and wakes;
      // the in-process one sends none (its plane's are published in-process). A standby's are not taken.
      if (held && events.length && this.d.siteEvents) await this.d.siteEvents(node._id, events);
      return {
        node_id: node._id,
        name: node.name,
        status: held ? 'reachable' : nodeStatus((await this.d.nodes.get(node._id)) ?? node),
        lease: held ? ('held' as const) : ('standby' as const),
        lease_ms: HOSTED_LEASE_MS,
        heartbeat_interval_ms: HOSTED_HEARTBEAT_MS,
        silent_after_ms: NODE_SILENT_MS,
      };
    }
    const now = await this.d.nodes.heartbeat(node._id, edgePort, processes?.map(fromProcessReport));
    // One that cannot be published fails the heartbeat, so the agent sends it again with the next.
    if (events.length && this.d.siteEvents) await this.d.siteEvents(node._id, events);
    return {
      node_id: node._id,
      name: node.name,
      status: now ? nodeStatus(now) : 'unreachable',
      heartbeat_interval_ms: NODE_HEARTBEAT_MS,
      silent_after_ms: NODE_SILENT_MS,
    };
  }

  /** A stopping agent gives the hosted node up, so a standby takes over at its next heartbeat. */
  async release(node: ConnectedNodeDoc, session: string): Promise<void> {
    if (node.hosted) await this.d.nodes.releaseLease(node._id, session);
  }

  /**
   * The oldest open task of this node: a pending one, or one claimed by an earlier process of the
   * agent (a restarted agent, or the hosted node's new holder, takes over what its predecessor
   * left). With `waitMs`, waits up to that long for one (a long poll: woken at once by a task opened
   * in this process, else it reads again every second). Answers null when none. On the hosted node
   * only the lease holder gets work.
   */
  async claim(node: ConnectedNodeDoc, session: string, waitMs = 0, signal?: AbortSignal): Promise<NodeTaskDoc | null> {
    const deadline = Date.now() + Math.min(Math.max(0, waitMs), MAX_CLAIM_WAIT_MS);
    for (;;) {
      if (node.hosted) {
        const now = await this.d.nodes.get(node._id);
        if (!now || now.leaseHolder !== session || !now.leaseUntil || now.leaseUntil.getTime() < Date.now()) return null;
      }
      const task = await this.d.tasks
        .findOneAndUpdate(
          {
            nodeId: node._id,
            $or: [{ status: 'pending' }, { status: 'claimed', claimedBy: { $ne: session } }],
          },
          { $set: { status: 'claimed', claimedBy: session, claimedAt: new Date() }, $inc: { claims: 1 } },
          { sort: { createdAt: 1 }, new: true },
        )
        .lean();
      if (task) return this.stillCurrent(node, task);
      const left = deadline - Date.now();
      if (left <= 0 || signal?.aborted) return null;
      await waitForNodeTask(node._id, Math.min(left, CLAIM_RECHECK_MS), signal);
    }
  }

  /**
   * A claim that waited may have been asked with a token rotated or revoked meanwhile (the token is
   * checked when the request arrives): the task goes back to pending and the caller gets 401.
   */
  private async stillCurrent(node: ConnectedNodeDoc, task: NodeTaskDoc): Promise<NodeTaskDoc> {
    const now = await this.d.nodes.get(node._id);
    if (now && now.tokenHash === node.tokenHash) return task;
    await this.d.tasks.updateOne(
      { _id: task._id, status: 'claimed', claimedBy: task.claimedBy },
      { $set: { status: 'pending', claimedBy: null, claimedAt: null }, $inc: { claims: -1 } },
    );
    throw unauthenticated('the node token is not valid');
  }

  async progress(node: ConnectedNodeDoc, taskId: string, session: string, detail: string): Promise<void> {
    await this.d.tasks.updateOne(
      { _id: taskId, nodeId: node._id, status: 'claimed', claimedBy: session },
      { $set: { progress: detail.slice(0, 300) } },
    );
  }

  /** The agent's outcome of a claimed task; a task it no longer holds is refused (409). */
  async complete(node: ConnectedNodeDoc, taskId: string, session: string, outcome: TaskOutcome): Promise<void> {
    if (outcome.ok) outcome = (await this.uploadedCapture(node, taskId, outcome.result)) ?? outcome;
    const set = outcome.ok
      ? // Secrets in the result (configure_site's admin access) are sealed before they are stored.
        { status: 'succeeded', result: sealTaskResult(taskId, outcome.result) }
      : { status: 'failed', error: { code: outcome.code, message: outcome.message, retriable: outcome.retriable ?? false } };
    const was = await this.d.tasks
      .findOneAndUpdate(
        { _id: taskId, nodeId: node._id, status: 'claimed', claimedBy: session },
        { $set: { ...set, finishedAt: new Date() } },
        { projection: { partUpload: 1 } },
      )
      .lean();
    if (!was) throw new PlatformError('task_not_held', 409, 'this agent does not hold that task');
    nodeTaskSettled(taskId);
    // An upload the task left unfinished is not resumed any more (decision 0390).
    if (was.partUpload && this.d.recoveryStore) await this.uploads().drop(was);
  }

  /**
   * A capture's result names a part this task uploaded (decision 0375): a node cannot make a recovery
   * point of bytes it did not send (another site's, read later by a restore of that point).
   */
  private async uploadedCapture(
    node: ConnectedNodeDoc,
    taskId: string,
    result: Record<string, unknown> | null | undefined,
  ): Promise<TaskOutcome | null> {
    const task = await this.d.tasks.findOne({ _id: taskId, nodeId: node._id }, { step: 1, uploaded: 1 }).lean();
    if (!task || !CAPTURE_STEPS.has(task.step) || result?.sha256 === undefined) return null;
    if ((task.uploaded ?? []).includes(String(result.sha256))) return null;
    return {
      ok: false,
      code: 'capture_failed',
      message: `the capture's part ${String(result.sha256)} was not uploaded for this task`,
    };
  }

  /**
   * The extras of sites placed on this node (decision 0365). Secrets leave their sealed records here,
   * for the node that runs the site only; the bridge's TLS protects them on the way.
   */
  async siteExtras(node: ConnectedNodeDoc, siteIds: string[]): Promise<Record<string, SiteExtrasValue>> {
    if (!this.d.siteExtras) throw new PlatformError('site_not_on_node', 404, `no site ${siteIds[0]} on this node`);
    return this.d.siteExtras({ id: node._id, hosted: node.hosted === true }, siteIds);
  }

  /** A task of this node that it holds now (claimed, not finished), or null: what a node may read through a task. */
  private heldTask(node: ConnectedNodeDoc, taskId: string): Promise<NodeTaskDoc | null> {
    return this.d.tasks.findOne({ _id: taskId, nodeId: node._id, status: 'claimed' }).lean<NodeTaskDoc>().exec();
  }

  /**
   * The release as a task this node holds (claimed, not finished) names it: a node reads the releases
   * of its own tasks only, never another node's (or tenant's) (decision 0365).
   */
  private async heldRelease(node: ConnectedNodeDoc, taskId: string, releaseId: string): Promise<AgentRelease> {
    const task = await this.heldTask(node, taskId);
    const release = task?.release?.releases.find((r) => r.releaseId === releaseId);
    if (!release) throw new PlatformError('task_not_found', 404, `no task ${taskId} of this node names release ${releaseId}`);
    return release;
  }

  private deliveries(): ReleaseDeliveries {
    const d = this.d.releases?.();
    if (!d) throw new PlatformError('releases_unavailable', 503, 'this platform process serves no commerce releases');
    return d;
  }

  /** How a release of a task this node holds runs: its environment (secrets opened), kind, gate. */
  async releaseRun(node: ConnectedNodeDoc, taskId: string, releaseId: string): Promise<ReleaseDelivery> {
    await this.heldRelease(node, taskId, releaseId);
    return this.deliveries().describe(releaseId);
  }

  /** The bytes of a release's bundle (the artifact, a tar archive), for a task this node holds. */
  async releaseBundle(node: ConnectedNodeDoc, taskId: string, releaseId: string): Promise<AgentBytes> {
    await this.heldRelease(node, taskId, releaseId);
    const b = await this.deliveries().bundle(releaseId);
    return new AgentBytes(b.stream, b.bytes);
  }

  /** What the hosted node's agent's release host observed (requests served, releases past the degraded rule). */
  async releaseObservations(node: ConnectedNodeDoc, b: AgentBody<'releaseObservations'>): Promise<void> {
    if (!node.hosted) throw new PlatformError('not_the_hosted_node', 403, 'only the hosted node runs releases');
    await this.deliveries().observed({
      access: (b.access ?? []).map((e) => ({
        projectId: e.project_id,
        releaseId: e.release_id,
        at: new Date(e.at),
        status: e.status,
        ms: e.ms,
      })),
      degraded: (b.degraded ?? []).map((d) => ({ releaseId: d.release_id, requests: d.requests, errors: d.errors })),
    });
  }

  /** Whether the platform still wants the release where the task named it (a reconcile, right before a start). */
  async releaseWanted(node: ConnectedNodeDoc, taskId: string, releaseId: string): Promise<boolean> {
    return this.deliveries().stillWanted(await this.heldRelease(node, taskId, releaseId));
  }

  /**
   * A data step this node holds (claimed, not finished) that names the part (a restore's, a rollback's,
   * a pin's) or, for an upload, a capture: a node reads and writes the parts of its own tasks only
   * (docs/decisions/0375-recovery-parts-over-the-agent-api.md).
   */
  private async heldDataTask(node: ConnectedNodeDoc, taskId: string): Promise<NodeTaskDoc> {
    const task = await this.heldTask(node, taskId);
    if (!task || !isSiteDataStep(task.step))
      throw new PlatformError('task_not_found', 404, `no data step ${taskId} of this node`);
    return task;
  }

  private recovery(): BlobStore {
    if (!this.d.recoveryStore)
      throw new PlatformError('parts_unavailable', 503, 'this platform process keeps no recovery points');
    return this.d.recoveryStore;
  }

  private uploads(): PartUploads {
    return (this.partUploads ??= new PartUploads(this.d.tasks, this.recovery(), this.d.partPieceBytes));
  }

  /**
   * The bytes of a recovery point's part that a data step this node holds names (a restore's), all of
   * them or the one range `range` asks for (RFC 9110 `Range`, decision 0390: a broken download resumes).
   */
  async partBytes(node: ConnectedNodeDoc, taskId: string, sha256: string, range?: string): Promise<AgentBytes> {
    const task = await this.heldDataTask(node, taskId);
    const point = task.data?.point ?? {};
    const part = [point.database, point.content, point.release].find((p) => p?.sha256 === sha256);
    if (!part) throw new PlatformError('part_not_found', 404, `task ${taskId} names no part ${sha256}`);
    const store = this.recovery();
    const size = await store.stat(RECOVERY_POINT_REGION, sha256);
    if (size === null) throw new PlatformError('part_not_found', 404, `the recovery store holds no part ${sha256}`);
    const r = partRange(range, size) ?? undefined;
    const stream = store.read(RECOVERY_POINT_REGION, sha256, r);
    return new AgentBytes(stream, r ? r.end - r.start + 1 : size, 'application/octet-stream', r && { ...r, size });
  }

  /** A capture step this node holds (the part calls' upload side). */
  private async heldCapture(node: ConnectedNodeDoc, taskId: string): Promise<NodeTaskDoc> {
    const task = await this.heldDataTask(node, taskId);
    if (!CAPTURE_STEPS.has(task.step)) throw new PlatformError('task_not_found', 404, `task ${taskId} captures nothing`);
    return task;
  }

  /** How much of the part `sha256` a capture this node holds has uploaded (tus's `HEAD`, decision 0390). */
  async heldUpload(node: ConnectedNodeDoc, taskId: string, sha256: string): Promise<HeldUpload> {
    return this.uploads().held(await this.heldCapture(node, taskId), sha256);
  }

  /**
   * A capture's bytes from the node that holds the step: held as they arrive (a broken upload resumes
   * from what is held, decision 0390), kept in the recovery store only when the whole part hashes to
   * `sha256` and has the stated length (else 422 `part_mismatch`, nothing kept), recorded on the task;
   * the step's result must then name a part it uploaded.
   */
  async putPart(
    node: ConnectedNodeDoc,
    taskId: string,
    sha256: string,
    up: AgentUpload,
  ): Promise<{ sha256: string; size_bytes: number }> {
    if (!SHA256_HEX.test(sha256)) throw badRequest('invalid_request', 'the part is named by its SHA-256 (64 hex digits)');
    const extent = uploadExtent(up, this.d.maxPartBytes ?? MAX_RECOVERY_PART_BYTES);
    const staged = await this.uploads().receive(await this.heldCapture(node, taskId), sha256, extent);
    await this.d.tasks.updateOne({ _id: taskId }, { $addToSet: { uploaded: sha256 } });
    return { sha256, size_bytes: staged.size };
  }

  /** The sites placed on this node that should run (or stay stopped) now, for the agent's reconcile. */
  async desired(node: ConnectedNodeDoc): Promise<DesiredSite[]> {
    if (node.hosted) return (await this.d.hostedSites?.()) ?? [];
    return (await this.d.nodeSites?.(node._id)) ?? [];
  }
}

/** An answer of bytes (a release's bundle, a recovery point's part), not JSON; `range`: one range of `size` (206). */
export class AgentBytes {
  constructor(
    readonly stream: Readable,
    readonly length: number | null,
    readonly type = 'application/x-tar',
    readonly range?: ByteRange & { size: number },
  ) {}
}

const CAPTURE_STEPS = new Set<string>(SITE_CAPTURE_STEPS);

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (!r.success) throw badRequest('invalid_request', r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return r.data;
}

const taskJson = (t: NodeTaskDoc) => ({
  id: t._id,
  operation_id: t.operationId,
  operation_type: t.operationType,
  step: t.step,
  ...(t.release ? { release: t.release } : { site: t.site }),
  ...(t.data ? { data: t.data } : {}),
});

/**
 * The agent protocol on the bridge: JSON over HTTP, the node token in `X-Node-Token`. Not in
 * `Authorization`: the bridge reads that header as an API key for every request, and a node token
 * there would count as a failed key authentication of the agent's address (core/rate-limit.ts).
 */
export function nodeAgentRoutes(app: FastifyInstance, api: NodeAgentService): void {
  void app.register(async (scope) => {
    const agents = new WeakMap<object, ConnectedNodeDoc>();
    const refuse = (reply: FastifyReply, e: PlatformError) =>
      reply.code(e.status).send({ success: false, error: { code: e.code, message: e.message, details: e.details } });
    // The token is checked before the body is read: a caller without a valid token learns nothing
    // about the body it sent (401 before 400, as every other route of the bridge).
    scope.addHook('onRequest', async (req, reply) => {
      const header = req.headers[NODE_TOKEN_HEADER];
      try {
        agents.set(req, await api.authenticate(typeof header === 'string' ? header : undefined));
      } catch (e) {
        if (!isPlatformError(e)) throw e;
        return refuse(reply, e);
      }
    });
    // An upload's body is not read here: the call streams it into the recovery store.
    scope.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
    // Each call is its own route (the OpenAPI document lists them: contract/openapi-byte-routes.ts);
    // all go through the one dispatcher the in-process hosted agent uses too.
    for (const [method, url] of AGENT_CALLS) {
      scope.route({
        method,
        url: `${NODE_AGENT_PATH}${url}`,
        handler: async (req, reply) => {
          const node = agents.get(req);
          if (!node) return refuse(reply, unauthenticated('the node token is not valid'));
          // A long-polled claim ends when its caller goes away.
          const gone = new AbortController();
          reply.raw.once('close', () => gone.abort());
          const p = new URL(req.url, 'http://agent').pathname.slice(NODE_AGENT_PATH.length);
          const out = await nodeAgentCall(api, node, req.method, p, partCallBody(req), gone.signal);
          // The extras and a release's run carry secrets: no cache keeps them.
          void reply.header('cache-control', 'no-store');
          const size = out.body.error?.details?.size;
          if (out.status === 416) void reply.header('content-range', `bytes */${String(size)}`);
          if (!out.bytes) return reply.code(out.status).send(out.body);
          if (out.bytes.length !== null) void reply.header('content-length', out.bytes.length);
          const r = out.bytes.range;
          if (r) void reply.header('content-range', `bytes ${r.start}-${r.end}/${r.size}`);
          if (out.bytes.type === 'application/octet-stream') void reply.header('accept-ranges', 'bytes');
          return reply.code(out.status).type(out.bytes.type).send(out.bytes.stream);
        },
      });
    }
  });
}

/**
 * One call of the agent protocol, after the token named `node`: the bridge's routes and the
 * platform's own hosted agent (dataplane/agent/agent.ts, in-process transport: hosted.ts) both go through it,
 * so the hosted pool speaks exactly the protocol a customer's agent speaks.
 */
export async function nodeAgentCall(
  api: NodeAgentService,
  node: ConnectedNodeDoc,
  method: string,
  p: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<{
  status: number;
  body: { success: boolean; data?: unknown; error?: { code: string; message: string; details?: Record<string, unknown> } };
  /** A download's bytes (then `body` is only `success`). */
  bytes?: AgentBytes;
}> {
  try {
    const data = await route(api, node, method, p, body, signal);
    if (data === undefined) throw new PlatformError('not_found', 404, `no agent call ${method} ${p}`);
    if (data instanceof AgentBytes) return { status: data.range ? 206 : 200, body: { success: true }, bytes: data };
    return { status: 200, body: { success: true, data } };
  } catch (e) {
    if (!isPlatformError(e)) throw e;
    return { status: e.status, body: { success: false, error: { code: e.code, message: e.message, details: e.details } } };
  }
}

async function route(
  api: NodeAgentService,
  node: ConnectedNodeDoc,
  method: string,
  p: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<unknown> {
  if (method === 'POST' && p === '/heartbeat') {
    const b = parse(agentBodies.heartbeat, body);
    return api.heartbeat(node, b.edge_port ?? null, b.session, b.site_events, b.site_processes);
  }
  if (method === 'POST' && p === '/tasks/claim') {
    const b = parse(agentBodies.claim, body);
    const task = await api.claim(node, b.session, b.wait_ms ?? 0, signal);
    return { task: task ? taskJson(task) : null };
  }
  if (method === 'POST' && p === '/lease/release') {
    await api.release(node, parse(agentBodies.release, body).session);
    return { released: true };
  }
  const task = /^\/tasks\/([^/]+)\/(progress|result)$/.exec(p);
  if (method === 'POST' && task) {
    const taskId = decodeURIComponent(task[1]);
    if (task[2] === 'progress') {
      const b = parse(agentBodies.progress, body);
      await api.progress(node, taskId, b.session, b.detail);
    } else {
      const b = parse(agentBodies.result, body);
      await api.complete(node, taskId, b.session, b.outcome);
    }
    return { recorded: true };
  }
  if (method === 'GET' && p === '/sites') return { sites: await api.desired(node) };
  if (method === 'POST' && p === '/releases/observations') {
    await api.releaseObservations(node, parse(agentBodies.releaseObservations, body));
    return { recorded: true };
  }
  if (method === 'POST' && p === '/sites/extras') {
    return { extras: await api.siteExtras(node, parse(agentBodies.siteExtras, body).site_ids) };
  }
  const part = /^\/tasks\/([^/]+)\/parts\/([^/]+?)(\/upload)?$/.exec(p);
  if (part) {
    const [taskId, sha256] = [decodeURIComponent(part[1]), decodeURIComponent(part[2])];
    if (part[3]) return method === 'GET' ? api.heldUpload(node, taskId, sha256) : undefined;
    if (method === 'GET') return api.partBytes(node, taskId, sha256, isRangeRequest(body) ? body.range : undefined);
    if (method === 'POST') {
      if (!isAgentUpload(body)) throw badRequest('invalid_request', 'a part is sent as application/octet-stream');
      return api.putPart(node, taskId, sha256, body);
    }
  }
  const release = /^\/tasks\/([^/]+)\/releases\/([^/]+)(\/bundle|\/wanted)?$/.exec(p);
  if (method === 'GET' && release) {
    const [taskId, releaseId] = [decodeURIComponent(release[1]), decodeURIComponent(release[2])];
    if (release[3] === '/bundle') return api.releaseBundle(node, taskId, releaseId);
    if (release[3] === '/wanted') return { wanted: await api.releaseWanted(node, taskId, releaseId) };
    return api.releaseRun(node, taskId, releaseId);
  }
  return undefined;
}
