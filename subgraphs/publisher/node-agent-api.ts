import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Model } from 'mongoose';
import { z } from 'zod';
import { PlatformError, badRequest, isPlatformError, unauthenticated } from '../../core/errors';
import type { PublisherModels } from './model';
import { type NodeSiteSpec, type NodeTaskDoc, nodeSiteSpec } from './node-tasks';
import { type ConnectedNodeDoc, type ConnectedNodes, NODE_HEARTBEAT_MS, NODE_SILENT_MS, nodeStatus } from './nodes';

/**
 * What a node agent may do, and nothing more (docs/decisions/0170-node-agent.md): authenticated
 * by its node token, it records heartbeats, claims and reports the tasks of its own node, and
 * reads the sites placed on its node with the state each should be in. Every query is scoped to
 * the token's node: a token never reads or claims another node's work.
 */

/** The agent protocol's paths on the bridge (`{base_url}`). */
export const NODE_AGENT_PATH = '/v1/node-agent';
/** The header that carries the node token (lower case, as Node reports headers). */
export const NODE_TOKEN_HEADER = 'x-node-token';

export interface DesiredSite {
  site: NodeSiteSpec;
  /** `running`: the agent keeps it up; `stopped`: routed as stopped (503); provisioning sites come as tasks. */
  state: 'running' | 'stopped';
}

export class NodeAgentService {
  constructor(private readonly d: { nodes: ConnectedNodes; tasks: Model<NodeTaskDoc>; models: PublisherModels }) {}

  async authenticate(token: string | undefined): Promise<ConnectedNodeDoc> {
    const node = await this.d.nodes.authenticate(token);
    if (!node) throw unauthenticated('the node token is not valid');
    return node;
  }

  async heartbeat(node: ConnectedNodeDoc, edgePort: number | null) {
    const now = await this.d.nodes.heartbeat(node._id, edgePort);
    return {
      node_id: node._id,
      name: node.name,
      status: now ? nodeStatus(now) : 'unreachable',
      heartbeat_interval_ms: NODE_HEARTBEAT_MS,
      silent_after_ms: NODE_SILENT_MS,
    };
  }

  /**
   * The oldest open task of this node: a pending one, or one claimed by an earlier process of the
   * agent (a restarted agent takes over what its predecessor left). Answers null when none.
   */
  async claim(node: ConnectedNodeDoc, session: string): Promise<NodeTaskDoc | null> {
    return this.d.tasks
      .findOneAndUpdate(
        {
          nodeId: node._id,
          $or: [{ status: 'pending' }, { status: 'claimed', claimedBy: { $ne: session } }],
        },
        { $set: { status: 'claimed', claimedBy: session, claimedAt: new Date() } },
        { sort: { createdAt: 1 }, new: true },
      )
      .lean();
  }

  async progress(node: ConnectedNodeDoc, taskId: string, session: string, detail: string): Promise<void> {
    await this.d.tasks.updateOne(
      { _id: taskId, nodeId: node._id, status: 'claimed', claimedBy: session },
      { $set: { progress: detail.slice(0, 300) } },
    );
  }

  /** The agent's outcome of a claimed task; a task it no longer holds is refused (409). */
  async complete(node: ConnectedNodeDoc, taskId: string, session: string, outcome: TaskOutcome): Promise<void> {
    const set = outcome.ok
      ? { status: 'succeeded', result: outcome.result ?? null }
      : { status: 'failed', error: { code: outcome.code, message: outcome.message, retriable: outcome.retriable ?? false } };
    const res = await this.d.tasks.updateOne(
      { _id: taskId, nodeId: node._id, status: 'claimed', claimedBy: session },
      { $set: { ...set, finishedAt: new Date() } },
    );
    if (res.matchedCount !== 1) throw new PlatformError('task_not_held', 409, 'this agent does not hold that task');
  }

  /** The sites placed on this node that should run (or stay stopped) now, for the agent's reconcile. */
  async desired(node: ConnectedNodeDoc): Promise<DesiredSite[]> {
    const sites = await this.d.models.Site.find({
      targetNodeId: node._id,
      deploymentMode: 'connected_node',
      status: { $in: ['running', 'stopped'] },
    }).lean();
    return sites.flatMap((s) => {
      try {
        return [{ site: nodeSiteSpec(s), state: s.status as 'running' | 'stopped' }];
      } catch {
        return [];
      }
    });
  }
}

const outcomeBody = z.union([
  z.object({ ok: z.literal(true), result: z.record(z.unknown()).nullable().optional() }).strict(),
  z
    .object({
      ok: z.literal(false),
      code: z.string().min(1).max(100),
      message: z.string().max(2000),
      retriable: z.boolean().optional(),
    })
    .strict(),
]);
type TaskOutcome = z.infer<typeof outcomeBody>;

const session = z.string().min(8).max(100);
const heartbeatBody = z.object({ edge_port: z.number().int().min(1).max(65535).nullable().optional() }).strict();
const claimBody = z.object({ session }).strict();
const progressBody = z.object({ session, detail: z.string().max(1000) }).strict();
const completeBody = z.object({ session, outcome: outcomeBody }).strict();

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
  site: t.site,
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
    const handle =
      (fn: (node: ConnectedNodeDoc, body: unknown, params: Record<string, string>) => Promise<unknown>) =>
      async (req: FastifyRequest, reply: FastifyReply) => {
        try {
          const node = agents.get(req);
          if (!node) throw unauthenticated('the node token is not valid');
          const data = await fn(node, req.body, (req.params ?? {}) as Record<string, string>);
          return reply.code(200).send({ success: true, data });
        } catch (e) {
          if (!isPlatformError(e)) throw e;
          return refuse(reply, e);
        }
      };
    scope.post(
      `${NODE_AGENT_PATH}/heartbeat`,
      handle((node, body) => api.heartbeat(node, parse(heartbeatBody, body).edge_port ?? null)),
    );
    scope.post(
      `${NODE_AGENT_PATH}/tasks/claim`,
      handle(async (node, body) => {
        const task = await api.claim(node, parse(claimBody, body).session);
        return { task: task ? taskJson(task) : null };
      }),
    );
    scope.post(
      `${NODE_AGENT_PATH}/tasks/:taskId/progress`,
      handle(async (node, body, params) => {
        const b = parse(progressBody, body);
        await api.progress(node, params.taskId, b.session, b.detail);
        return { recorded: true };
      }),
    );
    scope.post(
      `${NODE_AGENT_PATH}/tasks/:taskId/result`,
      handle(async (node, body, params) => {
        const b = parse(completeBody, body);
        await api.complete(node, params.taskId, b.session, b.outcome);
        return { recorded: true };
      }),
    );
    scope.get(
      `${NODE_AGENT_PATH}/sites`,
      handle(async (node) => ({ sites: await api.desired(node) })),
    );
  });
}
