import mongoose, { type Connection, type Model } from 'mongoose';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { model } from '../core/mongo';
import { badRequest, conflict, notFound } from '../core/errors';
import { decryptSecret, encryptSecret } from '../core/secrets';
import type { SiteProcess, SiteProcessStatus } from '../dataplane/sites';

/**
 * A customer-run machine that hosts sites in `connected_node` mode
 * (docs/decisions/0170-node-agent.md). Its agent authenticates with a node token, shown once at
 * registration (or at `nodes rotate-token`) and stored as a SHA-256 hash; its status is derived
 * from the last heartbeat. A rotated token or a removed node refuses the old token at once
 * (docs/decisions/0270-node-tokens-and-task-secrets.md).
 */
export interface ConnectedNodeDoc {
  _id: string;
  accountId: string;
  name: string;
  tags: string[];
  createdAt: Date;
  /** SHA-256 (hex) of the node token; absent on nodes registered before tokens existed. */
  tokenHash?: string | null;
  /**
   * The hosted node only: its token sealed with the platform's secret key (core/secrets.ts), so
   * every replica's in-process agent can open it; never set on a customer's node.
   */
  tokenSealed?: string | null;
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
  /**
   * A customer's node: the processes of the sites its agent runs, as its last heartbeat reported them,
   * and when (docs/decisions/0385-connected-site-process.md); null when that heartbeat reported none.
   */
  siteProcesses?: { at: Date; sites: Array<SiteProcess & { siteId: string }> } | null;
}

const nodeSchema = new mongoose.Schema<ConnectedNodeDoc>(
  {
    _id: String,
    accountId: { type: String, required: true, index: true },
    name: { type: String, required: true },
    tags: { type: [String], default: [] },
    createdAt: { type: Date, required: true },
    tokenHash: { type: String, default: null, index: true },
    tokenSealed: { type: String, default: null },
    lastHeartbeatAt: { type: Date, default: null },
    edgePort: { type: Number, default: null },
    drainedAt: { type: Date, default: null },
    hosted: { type: Boolean, default: false },
    leaseHolder: { type: String, default: null },
    leaseUntil: { type: Date, default: null },
    siteProcesses: { type: mongoose.Schema.Types.Mixed, default: null },
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

/** What binds the hosted node's sealed token to its record: copied elsewhere, it does not open. */
const HOSTED_TOKEN_AAD = `publisher_connected_nodes:${HOSTED_NODE_ID}:token`;

/** The hosted node's token, opened from its record; null when there is none or it does not open here. */
function openHostedToken(doc: ConnectedNodeDoc | null): string | null {
  if (!doc?.tokenSealed || !doc.tokenHash) return null;
  try {
    const token = decryptSecret(doc.tokenSealed, HOSTED_TOKEN_AAD);
    return hashNodeToken(token) === doc.tokenHash ? token : null;
  } catch {
    return null;
  }
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
/** A new node token: `pnode_` and 32 random bytes (base64url). */
const newNodeToken = () => `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
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
export function nodeAgentAlive(node: Pick<ConnectedNodeDoc, 'lastHeartbeatAt'>, now = Date.now()): boolean {
  return Boolean(node.lastHeartbeatAt && now - node.lastHeartbeatAt.getTime() < NODE_SILENT_MS);
}

/** A connected-node site's process as its node reported it: `unknown` once the node's agent is silent. */
export interface ReportedProcess extends Omit<SiteProcess, 'status'> {
  status: SiteProcessStatus | 'unknown';
  /** When the node reported it (its last heartbeat that carried the processes). */
  reportedAt: Date;
}

/**
 * A site's process as `node` last reported it (docs/decisions/0385-connected-site-process.md), or null
 * when that report does not name the site. While the node's agent answers (`nodeAgentAlive`: a
 * heartbeat within NODE_SILENT_MS, draining or not) it is shown as reported; once it is silent its
 * status is `unknown` and the rest is what the node last said.
 */
export function reportedProcess(node: ConnectedNodeDoc, siteId: string, now = Date.now()): ReportedProcess | null {
  const report = node.siteProcesses;
  const found = report?.sites.find((s) => s.siteId === siteId);
  if (!report || !found) return null;
  const { siteId: _site, ...p } = found;
  return { ...p, status: nodeAgentAlive(node, now) ? p.status : 'unknown', reportedAt: new Date(report.at) };
}

/** A heartbeat's update: its fields and the processes it reports, which replace the last report (none: the report goes). */
function withReport(set: Partial<ConnectedNodeDoc>, now: Date, processes?: Array<SiteProcess & { siteId: string }>) {
  return processes
    ? { $set: { ...set, siteProcesses: { at: now, sites: processes } } }
    : { $set: set, $unset: { siteProcesses: 1 as const } };
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
  constructor(
    conn: Connection,
    private readonly o: {
      /** How many live sites are placed on a node (the publishing area's records); none when unset. */
      liveSites?: (nodeId: string) => Promise<number>;
      /**
       * The hosted node's agent runs outside the platform (`PUBLISHER_HOSTED_AGENT=external`): a hosted
       * site's process is what that agent reports, as for a connected node (decision 0385).
       */
      hostedReports?: boolean;
    } = {},
  ) {
    // The collection keeps its name: the records predate this module (they were the publishing area's).
    this.model = model(conn, 'publisher', 'ConnectedNode', nodeSchema);
  }

  /** A new node and its token; the token is returned here only (the record keeps its hash). */
  async register(accountId: string, name: string, tags: string[] = []): Promise<ConnectedNodeDoc & { token: string }> {
    for (const t of tags)
      if (!NODE_TAG.test(t)) throw badRequest('invalid_node_tag', `tag "${t}" is not of the form <key>:<value>`);
    const token = newNodeToken();
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

  /**
   * Records a heartbeat (one write) with the processes it reports, which replace the last report (none:
   * the report goes, as from an agent that reports none); answers the node as it now stands.
   */
  async heartbeat(
    nodeId: string,
    edgePort: number | null,
    processes?: Array<SiteProcess & { siteId: string }>,
  ): Promise<ConnectedNodeDoc | null> {
    const now = new Date();
    const set: Partial<ConnectedNodeDoc> = { lastHeartbeatAt: now };
    if (edgePort !== null) set.edgePort = edgePort;
    return this.model.findOneAndUpdate({ _id: nodeId }, withReport(set, now, processes), { new: true }).lean();
  }

  /**
   * The hosted node's record, created by the first replica that starts, and its token: random like
   * every node's, its hash on the record, and sealed there with the platform's secret key so that
   * every replica (and this one after a restart) opens the same token. A record whose sealed token
   * does not open (none yet, an older record whose token was derived from the key, or a key no
   * longer configured) gets a new token.
   */
  async ensureHosted(): Promise<string> {
    for (let i = 0; ; i++) {
      try {
        await this.model.updateOne(
          { _id: HOSTED_NODE_ID },
          {
            $setOnInsert: {
              accountId: HOSTED_NODE_ACCOUNT,
              name: 'hosted pool',
              tags: [],
              createdAt: new Date(),
              hosted: true,
              tokenHash: null,
              tokenSealed: null,
            },
          },
          { upsert: true },
        );
        break;
      } catch (e) {
        // Two replicas inserting at once: the loser finds the record on its next try.
        if ((e as { code?: number }).code !== 11000 || i > 2) throw e;
      }
    }
    for (let i = 0; i < 5; i++) {
      const doc = await this.model.findById(HOSTED_NODE_ID).lean();
      const token = openHostedToken(doc);
      if (token) return token;
      const fresh = newNodeToken();
      // Compare-and-swap on the sealed value: of two replicas sealing at once, one wins and both use its token.
      const res = await this.model.updateOne(
        { _id: HOSTED_NODE_ID, tokenSealed: doc?.tokenSealed ?? null },
        { $set: { tokenHash: hashNodeToken(fresh), tokenSealed: encryptSecret(fresh, HOSTED_TOKEN_AAD) } },
      );
      if (res.modifiedCount === 1) return fresh;
    }
    // Replicas whose SECRET_ENCRYPTION_KEY differ keep replacing each other's token.
    throw new Error(
      'the hosted node token sealed by another replica does not open here: do the replicas share SECRET_ENCRYPTION_KEY?',
    );
  }

  /** The hosted node's token as it stands now (after a `nodes rotate-token --node hosted`, the new one). */
  async hostedToken(): Promise<string | null> {
    return openHostedToken(await this.model.findById(HOSTED_NODE_ID).lean());
  }

  /**
   * `nodes rotate-token`: a new token for the node, answered here only; the old one is refused from
   * the next request on (every request looks its token's hash up). On the hosted node the new token
   * is sealed on the record too, and the in-process agents pick it up at their next refused call.
   */
  async rotateToken(nodeId: string): Promise<{ node: ConnectedNodeDoc; token: string }> {
    const token = newNodeToken();
    const set: Partial<ConnectedNodeDoc> = { tokenHash: hashNodeToken(token) };
    if (nodeId === HOSTED_NODE_ID) set.tokenSealed = encryptSecret(token, HOSTED_TOKEN_AAD);
    const node = await this.model.findOneAndUpdate({ _id: nodeId }, { $set: set }, { new: true }).lean();
    if (!node) throw notFound('unknown_node', `no node has the id ${nodeId}`);
    return { node, token };
  }

  /**
   * `nodes remove`: the node and its token end (the token is refused from the next request on). A
   * node that still has sites placed on it is refused, 409 `node_has_sites`: they are moved or
   * deleted first. The hosted node is the platform's own and is never removed.
   */
  async remove(nodeId: string): Promise<{ id: string; removed: true }> {
    const node = await this.get(nodeId);
    if (!node) throw notFound('unknown_node', `no node has the id ${nodeId}`);
    if (node.hosted) throw conflict('node_not_removable', "the hosted node is the platform's own and cannot be removed");
    const live = (await this.o.liveSites?.(nodeId)) ?? 0;
    if (live > 0) {
      throw conflict(
        'node_has_sites',
        `node ${nodeId} still has ${live} site${live === 1 ? '' : 's'} placed on it; move or delete ${live === 1 ? 'it' : 'them'} first`,
        { node_id: nodeId, sites: live },
      );
    }
    await this.model.deleteOne({ _id: nodeId });
    return { id: nodeId, removed: true };
  }

  /**
   * A heartbeat of the hosted node by one agent process: it takes or renews the lease when it holds
   * it or nobody does (free, or expired HOSTED_LEASE_MS after the holder's last renewal); a standby
   * agent's heartbeat changes nothing. Answers whether `session` holds the node now.
   */
  async leaseHeartbeat(
    nodeId: string,
    session: string,
    edgePort: number | null,
    processes?: Array<SiteProcess & { siteId: string }>,
  ): Promise<boolean> {
    const now = new Date();
    const set: Partial<ConnectedNodeDoc> = {
      lastHeartbeatAt: now,
      leaseHolder: session,
      leaseUntil: new Date(now.getTime() + HOSTED_LEASE_MS),
    };
    if (edgePort !== null) set.edgePort = edgePort;
    // Only the holder's report is kept (a standby runs no site), with the lease in the same write.
    const held = await this.model
      .findOneAndUpdate(
        { _id: nodeId, $or: [{ leaseHolder: session }, { leaseHolder: null }, { leaseUntil: { $lt: now } }] },
        withReport(set, now, processes),
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

  /**
   * A connected-node site's node as its metadata shows it (docs/contracts.md) and the site's process
   * as that node reported it (`reportedProcess`), from one read; both null for a hosted site (its
   * process is the platform's own plane's), unless the hosted node's agent runs outside and reports it. Only the
   * node the site is placed on speaks for it: what another node reports of it is never read.
   */
  async ofSite(site: {
    _id: string;
    deploymentMode: string;
    targetNodeId: string | null;
  }): Promise<{ node: { id: string; status: NodeStatus } | null; process: ReportedProcess | null }> {
    if (site.deploymentMode === 'hosted' && this.o.hostedReports) {
      const hosted = await this.get(HOSTED_NODE_ID);
      return { node: null, process: hosted ? reportedProcess(hosted, site._id) : null };
    }
    if (site.deploymentMode !== 'connected_node' || !site.targetNodeId) return { node: null, process: null };
    const node = await this.get(site.targetNodeId);
    return {
      node: { id: site.targetNodeId, status: node ? nodeStatus(node) : 'unreachable' },
      process: node ? reportedProcess(node, site._id) : null,
    };
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
