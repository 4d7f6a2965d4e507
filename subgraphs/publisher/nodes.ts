import mongoose, { type Connection, type Model } from 'mongoose';
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { model } from '../../core/mongo';
import { badRequest, conflict } from '../../core/errors';

/**
 * A customer-run machine that hosts sites in `connected_node` mode
 * (docs/decisions/0170-node-agent.md). Its agent authenticates with a node token, shown once at
 * registration and stored as a SHA-256 hash; its status is derived from the last heartbeat.
 */
export interface ConnectedNodeDoc {
  _id: string;
  accountId: string;
  name: string;
  tags: string[];
  createdAt: Date;
  /** SHA-256 (hex) of the node token; absent on nodes registered before tokens existed. */
  tokenHash?: string | null;
  lastHeartbeatAt?: Date | null;
  /** The port the agent's edge listens on, as it last reported. */
  edgePort?: number | null;
  /** Set by `nodes drain`: the node keeps its sites but takes no new ones. */
  drainedAt?: Date | null;
  /** The platform's own node (the hosted pool, HOSTED_NODE_ID): one agent at a time holds it. */
  hosted?: boolean;
  /** The agent process (its session) that holds the hosted node, and until when (HOSTED_LEASE_MS). */
  leaseHolder?: string | null;
  leaseUntil?: Date | null;
}

const nodeSchema = new mongoose.Schema<ConnectedNodeDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    name: { type: String, required: true },
    tags: { type: [String], default: [] },
    createdAt: { type: Date, required: true },
    tokenHash: { type: String, default: null, index: true },
    lastHeartbeatAt: { type: Date, default: null },
    edgePort: { type: Number, default: null },
    drainedAt: { type: Date, default: null },
    hosted: { type: Boolean, default: false },
    leaseHolder: { type: String, default: null },
    leaseUntil: { type: Date, default: null },
  },
  { collection: 'publisher_connected_nodes', versionKey: false },
);

/** `<key>:<value>`, as used by node selector tags. */
export const NODE_TAG = /^[a-z0-9][a-z0-9._-]{0,62}:[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** A node whose agent has been silent this long is `unreachable` (docs/contracts.md, "the data plane"). */
export const NODE_SILENT_MS = 30_000;
/** The agent's heartbeat period (docs/contracts.md). */
export const NODE_HEARTBEAT_MS = 5_000;
/** The agent's edge port when it has not reported one (docs/contracts.md). */
export const DEFAULT_AGENT_EDGE_PORT = 8083;

/**
 * The hosted pool as a node (docs/decisions/0225-hosted-pool-node.md): one record shared by every
 * replica, owned by no customer account (so no `nodes list` shows it and no `target_node_id`
 * reaches it). Its agent runs inside the platform; one agent process holds it at a time.
 */
export const HOSTED_NODE_ID = 'hosted';
/** The owner of the hosted node: not an account id (account ids are UUIDs). */
export const HOSTED_NODE_ACCOUNT = 'platform:hosted-pool';
/** How long the hosted node's lease lasts without renewal: a standby agent takes over after it. */
export const HOSTED_LEASE_MS = 10_000;
/** The hosted node's heartbeat (and lease renewal) period, told to its agents in each heartbeat's answer. */
export const HOSTED_HEARTBEAT_MS = 2_000;

/**
 * The hosted node's token: derived from the platform's secret key (HMAC-SHA-256), so every replica
 * knows it without storing it; the record keeps only its hash, like every node's.
 */
export function hostedNodeToken(secretKey: string): string {
  return `pnode_${createHmac('sha256', secretKey).update('publisher.hosted-node-token.v1').digest('base64url')}`;
}

export type NodeStatus = 'reachable' | 'unreachable' | 'draining';

export interface NodeView {
  id: string;
  name: string;
  tags: string[];
  status: NodeStatus;
  lastHeartbeatAt: Date | null;
  edgePort: number | null;
  createdAt: Date;
}

const TOKEN_PREFIX = 'pnode_';
export const hashNodeToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * `draining` wins over the heartbeat (an operator's decision); otherwise a node is `reachable`
 * while its last heartbeat is younger than NODE_SILENT_MS, and `unreachable` before its first one.
 */
export function nodeStatus(node: ConnectedNodeDoc, now = Date.now()): NodeStatus {
  if (node.drainedAt) return 'draining';
  const last = node.lastHeartbeatAt ? node.lastHeartbeatAt.getTime() : null;
  return last !== null && now - last < NODE_SILENT_MS ? 'reachable' : 'unreachable';
}

/** Whether the agent answers, whatever the operator decided (a draining node still runs its sites). */
export function nodeAgentAlive(node: ConnectedNodeDoc, now = Date.now()): boolean {
  return Boolean(node.lastHeartbeatAt && now - node.lastHeartbeatAt.getTime() < NODE_SILENT_MS);
}

export function nodeView(node: ConnectedNodeDoc, now = Date.now()): NodeView {
  return {
    id: node._id,
    name: node.name,
    tags: node.tags,
    status: nodeStatus(node, now),
    lastHeartbeatAt: node.lastHeartbeatAt ?? null,
    edgePort: node.edgePort ?? null,
    createdAt: node.createdAt,
  };
}

export class ConnectedNodes {
  readonly model: Model<ConnectedNodeDoc>;
  constructor(conn: Connection) {
    this.model = model(conn, 'publisher', 'ConnectedNode', nodeSchema);
  }

  /** A new node and its token; the token is returned here only (the record keeps its hash). */
  async register(accountId: string, name: string, tags: string[] = []): Promise<ConnectedNodeDoc & { token: string }> {
    for (const t of tags)
      if (!NODE_TAG.test(t)) throw badRequest('invalid_node_tag', `tag "${t}" is not of the form <key>:<value>`);
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const doc = await this.model.create({
      _id: randomUUID(),
      accountId,
      name,
      tags: [...new Set(tags)],
      createdAt: new Date(),
      tokenHash: hashNodeToken(token),
    });
    return { ...doc.toObject(), token };
  }

  /** The node a token belongs to; null for a forged, malformed or unknown token. */
  async authenticate(token: string | undefined | null): Promise<ConnectedNodeDoc | null> {
    if (!token || !token.startsWith(TOKEN_PREFIX) || token.length > 200) return null;
    return this.model.findOne({ tokenHash: hashNodeToken(token) }).lean();
  }

  /** Records a heartbeat (one write); answers the node as it now stands. */
  async heartbeat(nodeId: string, edgePort: number | null): Promise<ConnectedNodeDoc | null> {
    const set: Partial<ConnectedNodeDoc> = { lastHeartbeatAt: new Date() };
    if (edgePort !== null) set.edgePort = edgePort;
    return this.model.findOneAndUpdate({ _id: nodeId }, { $set: set }, { new: true }).lean();
  }

  /**
   * The hosted node's record, created by the first replica that starts; its token hash follows the
   * secret key in force (a rotated key gives a new token).
   */
  async ensureHosted(token: string): Promise<ConnectedNodeDoc> {
    for (let i = 0; ; i++) {
      try {
        const doc = await this.model
          .findOneAndUpdate(
            { _id: HOSTED_NODE_ID },
            {
              $setOnInsert: {
                accountId: HOSTED_NODE_ACCOUNT,
                name: 'hosted pool',
                tags: [],
                createdAt: new Date(),
                hosted: true,
              },
              $set: { tokenHash: hashNodeToken(token) },
            },
            { upsert: true, new: true },
          )
          .lean();
        return doc!;
      } catch (e) {
        // Two replicas inserting at once: the loser finds the record on its next try.
        if ((e as { code?: number }).code !== 11000 || i > 2) throw e;
      }
    }
  }

  /**
   * A heartbeat of the hosted node by one agent process: it takes or renews the lease when it holds
   * it or nobody does (free, or expired HOSTED_LEASE_MS after the holder's last renewal); a standby
   * agent's heartbeat changes nothing. Answers whether `session` holds the node now.
   */
  async leaseHeartbeat(nodeId: string, session: string, edgePort: number | null): Promise<boolean> {
    const now = new Date();
    const set: Partial<ConnectedNodeDoc> = {
      lastHeartbeatAt: now,
      leaseHolder: session,
      leaseUntil: new Date(now.getTime() + HOSTED_LEASE_MS),
    };
    if (edgePort !== null) set.edgePort = edgePort;
    const held = await this.model
      .findOneAndUpdate(
        { _id: nodeId, $or: [{ leaseHolder: session }, { leaseHolder: null }, { leaseUntil: { $lt: now } }] },
        { $set: set },
        { new: true },
      )
      .lean();
    return held !== null;
  }

  /** Gives the hosted node's lease up (a stopping agent): a standby takes over at its next heartbeat. */
  async releaseLease(nodeId: string, session: string): Promise<void> {
    await this.model.updateOne({ _id: nodeId, leaseHolder: session }, { $set: { leaseHolder: null, leaseUntil: null } });
  }

  /** The node when it exists and belongs to the account; null otherwise (the two are not told apart). */
  async findForAccount(accountId: string, nodeId: string): Promise<ConnectedNodeDoc | null> {
    const node = await this.model.findById(nodeId).lean();
    return node && node.accountId === accountId ? node : null;
  }

  async get(nodeId: string): Promise<ConnectedNodeDoc | null> {
    return this.model.findById(nodeId).lean();
  }

  async list(accountId: string): Promise<NodeView[]> {
    const now = Date.now();
    return (await this.model.find({ accountId }).sort({ createdAt: 1, _id: 1 }).lean()).map((n) => nodeView(n, now));
  }

  /** `nodes drain`: the node takes no new sites; the ones it has keep running. */
  async drain(accountId: string, nodeId: string): Promise<NodeView> {
    const node = await this.model
      .findOneAndUpdate({ _id: nodeId, accountId }, { $set: { drainedAt: new Date() } }, { new: true })
      .lean();
    if (!node) throw conflict('unknown_node', 'no connected node of this account has that id');
    return nodeView(node);
  }

  /**
   * Placement by selector tags (docs/spec-decisions.md, "Connected nodes"): among the account's
   * reachable nodes that carry every tag, the one with the fewest sites placed on it; ties go to
   * the node registered first, then the smaller id. Never another account's node, never a draining
   * or unreachable one. `siteCount` counts the live sites on a node.
   */
  async choose(
    accountId: string,
    tags: string[],
    siteCount: (nodeId: string) => Promise<number>,
  ): Promise<ConnectedNodeDoc | null> {
    const now = Date.now();
    const candidates = (await this.model.find({ accountId, tags: { $all: tags } }).lean()).filter(
      (n) => nodeStatus(n, now) === 'reachable',
    );
    const counted = await Promise.all(candidates.map(async (n) => ({ n, sites: await siteCount(n._id) })));
    counted.sort(
      (a, b) =>
        a.sites - b.sites ||
        a.n.createdAt.getTime() - b.n.createdAt.getTime() ||
        (a.n._id < b.n._id ? -1 : a.n._id > b.n._id ? 1 : 0),
    );
    return counted[0]?.n ?? null;
  }

  /** A connected-node site's node as its metadata shows it (docs/contracts.md); null for a hosted site. */
  async ofSite(site: {
    deploymentMode: string;
    targetNodeId: string | null;
  }): Promise<{ id: string; status: NodeStatus } | null> {
    if (site.deploymentMode !== 'connected_node' || !site.targetNodeId) return null;
    const node = await this.get(site.targetNodeId);
    return { id: site.targetNodeId, status: node ? nodeStatus(node) : 'unreachable' };
  }

  /** A lifecycle action on a site whose node's agent is silent: 409 `node_unreachable` (docs/contracts.md). */
  async assertReachable(site: { deploymentMode: string; targetNodeId: string | null }): Promise<void> {
    if (site.deploymentMode !== 'connected_node' || !site.targetNodeId) return;
    const node = await this.get(site.targetNodeId);
    if (!node || !nodeAgentAlive(node)) {
      throw conflict('node_unreachable', 'the node this site is placed on is unreachable; try again when its agent is back', {
        node_id: site.targetNodeId,
        last_heartbeat_at: node?.lastHeartbeatAt?.toISOString() ?? null,
      });
    }
  }

  /** A site's address on the node's own edge (docs/contracts.md): `http://<slug>.sites.localhost:<edge port>/`. */
  siteUrl(node: ConnectedNodeDoc, slug: string): string {
    return `http://${slug}.sites.localhost:${node.edgePort ?? DEFAULT_AGENT_EDGE_PORT}/`;
  }
}
