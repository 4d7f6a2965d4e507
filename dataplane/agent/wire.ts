import { z } from 'zod';
import { Readable } from 'node:stream';
import type { ReleaseRun } from '../releases';
import type { MysqlSiteDatabase } from '../site-database';
import { camelKeys } from '../../core/field-names';
import { SITE_PROCESS_STATUSES, type SiteProcess } from '../sites';

/**
 * The agent protocol's wire (docs/decisions/0170-node-agent.md, 0285-one-road-to-a-machine.md): the
 * one file both sides import. The platform's side (nodes/agent-api.ts, nodes/tasks.ts,
 * subgraphs/publisher/node-tasks.ts) writes tasks and parses the agent's calls with these; the agent
 * (dataplane/agent/agent.ts) reads tasks and sends calls typed by them. JSON over HTTP under
 * NODE_AGENT_PATH, the node token in NODE_TOKEN_HEADER; the hosted node's in-process agent speaks
 * the same calls without the socket.
 */

/** The agent protocol's paths on the bridge (`{base_url}`). */
export const NODE_AGENT_PATH = '/v1/node-agent';
/**
 * The header that carries the node token (lower case, as Node reports headers). Not
 * `Authorization`: the bridge reads that as an API key, and a node token there would count as a
 * failed key authentication of the agent's address (core/rate-limit.ts).
 */
export const NODE_TOKEN_HEADER = 'x-node-token';
/**
 * The longest a claim waits for work (`wait_ms`): a long-polled claim is one request where a polling
 * agent made twenty, so the bridge's per-address limit still counts every request an agent makes.
 */
export const MAX_CLAIM_WAIT_MS = 20_000;

/** The calls of the protocol, as routes under NODE_AGENT_PATH. */
export const AGENT_CALLS: ReadonlyArray<readonly ['GET' | 'POST', string]> = [
  ['POST', '/heartbeat'],
  ['POST', '/tasks/claim'],
  ['POST', '/lease/release'],
  ['POST', '/tasks/:taskId/progress'],
  ['POST', '/tasks/:taskId/result'],
  ['GET', '/sites'],
  // What a site's process starts with beyond its spec, and a release task's bundle and environment
  // (docs/decisions/0365-agent-fetches-extras-and-releases.md): read by the agent, never in a task record.
  ['POST', '/sites/extras'],
  ['GET', '/tasks/:taskId/releases/:releaseId'],
  ['GET', '/tasks/:taskId/releases/:releaseId/bundle'],
  ['GET', '/tasks/:taskId/releases/:releaseId/wanted'],
  ['POST', '/releases/observations'],
  // A recovery point's parts (docs/decisions/0375-recovery-parts-over-the-agent-api.md): a part the
  // task names (a restore's), and a capture's bytes, checked against the SHA-256 in the path.
  ['GET', '/tasks/:taskId/parts/:sha256'],
  ['POST', '/tasks/:taskId/parts/:sha256'],
  // How much of a capture's part the platform holds, so a broken upload resumes from there
  // (docs/decisions/0390-resumable-part-transfers.md).
  ['GET', '/tasks/:taskId/parts/:sha256/upload'],
];

/** The most bytes one recovery point's part may have (`POST /tasks/:taskId/parts/:sha256`). */
export const MAX_RECOVERY_PART_BYTES = 8 * 1024 ** 3;

/**
 * A captured part's bytes on their way to the platform: over HTTP an `application/octet-stream`
 * body of `content-length` bytes; in process (the hosted agent) the stream itself. A resumed upload
 * (decision 0390) sends the rest of the part: `offset` is where its bytes start (`Upload-Offset`,
 * what the platform holds) and `length` the whole part's (`Upload-Length`); absent, 0 and `size`.
 */
export interface AgentUpload {
  stream: Readable;
  size: number;
  offset?: number;
  length?: number;
}

/** A resumed upload's headers (as tus names them): where its bytes start in the part, the part's whole length. */
export const UPLOAD_OFFSET_HEADER = 'upload-offset';
export const UPLOAD_LENGTH_HEADER = 'upload-length';

/** What the platform holds of a capture's upload (`GET /tasks/:taskId/parts/:sha256/upload`). */
export interface HeldUpload {
  sha256: string;
  /** The bytes held from the part's start: the next upload sends the rest from here. */
  offset: number;
  /** The whole part's length as its first upload stated it; null when nothing is held. */
  length: number | null;
}

/**
 * A part's download from `from` on (decision 0390): over HTTP a `Range: bytes=<from>-` header, answered
 * 206; in process (the hosted agent) this body of the call.
 */
export interface AgentRangeRequest {
  range: string;
}

export const isRangeRequest = (body: unknown): body is AgentRangeRequest =>
  typeof body === 'object' && body !== null && typeof (body as { range?: unknown }).range === 'string';

export const isAgentUpload = (body: unknown): body is AgentUpload =>
  typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream instanceof Readable;

/** An upload's HTTP headers. */
export const uploadHeaders = (u: AgentUpload) => ({
  'content-type': 'application/octet-stream',
  'content-length': String(u.size),
  ...(u.offset !== undefined ? { [UPLOAD_OFFSET_HEADER]: String(u.offset) } : {}),
  ...(u.length !== undefined ? { [UPLOAD_LENGTH_HEADER]: String(u.length) } : {}),
});

/**
 * The steps of a site that act on the machine, each a task of the site's node (hosted or
 * connected). The agent runs them with the site's runtime driver (dataplane/runtimes/).
 */
export const MACHINE_STEPS = [
  'pull_image',
  'start_runtime',
  'configure_site',
  'health_check',
  'drain_traffic',
  'stop_runtime',
  'delete_site',
] as const;
export type MachineStep = (typeof MACHINE_STEPS)[number];

export const isMachineStep = (step: string): step is MachineStep => (MACHINE_STEPS as readonly string[]).includes(step);

/** The data steps that capture a part of a recovery point (and upload it: `POST /tasks/:taskId/parts/:sha256`). */
export const SITE_CAPTURE_STEPS = ['capture_database', 'capture_content', 'capture_release'] as const;

/**
 * A hosted site's data steps (docs/decisions/0360-data-steps-on-the-node.md): a recovery point's
 * capture, a restore (a staging copy's re-keying is part of its `restore_database`) and an upgrade's
 * rollback, tasks of the hosted node whose agent runs them with the site's runtime driver and the
 * recovery store (./data-executor.ts). A task names what to do in `data`; a connected node's sites
 * skip them (their points hold no bytes), except `rollback`, which starts the old release there.
 */
export const SITE_DATA_STEPS = [...SITE_CAPTURE_STEPS, 'restore_database', 'restore_content', 'pin_release', 'rollback'] as const;
export type SiteDataStep = (typeof SITE_DATA_STEPS)[number];

export const isSiteDataStep = (step: string): step is SiteDataStep => (SITE_DATA_STEPS as readonly string[]).includes(step);

/** One sealed part of a recovery point in the recovery store: its content address (SHA-256) and size. */
export interface AgentPart {
  sha256: string;
  sizeBytes: number;
}

/** The release a recovery point pins, as its manifest seals it. */
export interface AgentReleaseManifest {
  name: string;
  version: string;
  image: string;
  /** The registry's digest (the npm integrity of the release). */
  digest: string;
}

/**
 * What a data step asks for. Its answer: a capture's part (`sha256`, `size_bytes`); a staging copy's
 * `restore_database` with `rekey`, the copy's own access (`integration_id`, `admin_api_key`, sealed
 * by the platform as `configure_site`'s).
 */
export interface SiteDataWork {
  /** The point's parts to put back (`restore_*`, `rollback`) or whose release to check (`pin_release`). */
  point?: { database?: AgentPart; content?: AgentPart; release?: AgentPart };
  /** `capture_release`: the manifest to seal; `pin_release`: the release the point must pin. */
  release?: AgentReleaseManifest;
  /** A staging copy: the platform's integration in the copied database, whose keys the copy replaces. */
  rekey?: { integrationId: string };
}

/** What an agent needs to run a step on a site, without reading the platform's database. */
export interface AgentSite {
  siteId: string;
  slug: string;
  name: string;
  url: string;
  hosts: string[];
  /** The exact release: `name` is the catalog's runtime name, which picks the driver. */
  runtime: { name: string; version: string; integrity: string; memoryFloorMb: number };
  /** True when the site may sleep while idle (its plan allows it; dataplane/sleep.ts). Absent: it never sleeps. */
  sleeps?: boolean;
}

/** A claimed task as the agent receives it. */
export interface AgentTask {
  id: string;
  operation_id: string;
  operation_type: string;
  step: string;
  site: AgentSite;
  /** A data step's work (SITE_DATA_STEPS); absent for a machine step. */
  data?: SiteDataWork;
}

/**
 * The steps of a commerce release on the hosted node (docs/decisions/0325-nodes-module.md), run by
 * the agent's release executor (./release-executor.ts) with the storefront and app drivers.
 */
export const RELEASE_STEPS = ['release_start', 'release_promote', 'release_reconcile'] as const;

/**
 * A release as a task names it: ids and what to do with its addresses. Its bundle and its process
 * environment (secrets included) come from the node's release source, never from the task record.
 */
export interface AgentRelease {
  releaseId: string;
  projectId: string;
  /** Serves (or is to serve) the project's production address. */
  production: boolean;
  /** Its gate passed before: the degraded rule watches it again (reconcile). */
  healthy: boolean;
}

/** What a release task asks for. */
export interface ReleaseWork {
  /** `release_start`, `release_promote`: the one release; `release_reconcile`: every release that should run. */
  releases: AgentRelease[];
  /** `release_start` of a preview: the project's older previews, stopped unless they serve production. */
  supersede?: string[];
  /** `release_reconcile`: releases whose directory stays even when they do not run here (in a gate elsewhere). */
  keep?: string[];
}

/** A claimed release task as the agent receives it. */
export interface AgentReleaseTask {
  id: string;
  operation_id: string;
  operation_type: string;
  step: string;
  release: ReleaseWork;
}

/**
 * What a site's process starts with beyond its spec (`POST /sites/extras`): the hosted pool's mail
 * configuration and the site's MySQL database, secrets included. Empty for a customer's node's sites
 * (SQLite, unconfigured).
 */
export interface SiteExtrasValue {
  config?: Record<string, string>;
  database?: MysqlSiteDatabase;
}

/** The most sites one `POST /sites/extras` names. */
export const MAX_EXTRAS_SITES = 200;

/** The most requests one `POST /releases/observations` carries (an agent sends them every second). */
export const MAX_OBSERVED_REQUESTS = 5_000;

/**
 * How a release of a claimed task runs (`GET /tasks/:taskId/releases/:releaseId`): its process
 * environment (secrets included), the kind of bundle its connection expects, its memory, the health
 * gate's time and the commerce platform's address for a storefront's binding; `sha256` is the
 * bundle's (`…/bundle`), checked by the agent once downloaded.
 */
export interface ReleaseDelivery {
  run: ReleaseRun;
  sha256: string;
}

/** An agent's failure when a downloaded bundle is not of the kind its release expects (commerce: COMMERCE_CONFIG_MISMATCH). */
export const BUNDLE_KIND_MISMATCH = 'bundle_kind_mismatch';

/** A site placed on the node with the state it should be in (the agent's reconcile). */
export interface DesiredSite {
  site: AgentSite;
  /** `running`: the agent keeps it up; `stopped`: routed as stopped (503); provisioning sites come as tasks. */
  state: 'running' | 'stopped';
}

const session = z.string().min(8).max(100);

/** A task's outcome as the agent reports it. */
export const taskOutcome = z.union([
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
export type TaskOutcome = z.infer<typeof taskOutcome>;

/** The most sleeps and wakes an agent keeps for its next heartbeat (the oldest go first). */
export const MAX_SITE_EVENTS = 500;

/**
 * A sleep or wake of a site on the agent's own data plane (docs/decisions/0350-node-power-events.md),
 * sent with the next heartbeat; the platform publishes those of sites placed on the node.
 */
export const siteEvent = z
  .object({
    site_id: z.string().min(1).max(100),
    kind: z.enum(['slept', 'woke']),
    /** Why it slept (`slept` only). */
    reason: z.enum(['idle', 'capacity']).nullable().optional(),
    /** How long the wake took, in ms (`woke` only). */
    wake_ms: z.number().int().min(0).nullable().optional(),
    at: z.string().datetime(),
  })
  .strict();
export type SiteEvent = z.infer<typeof siteEvent>;

/** The most sites' processes one heartbeat reports (a node's other sites show none). */
export const MAX_REPORTED_PROCESSES = 500;

/**
 * A site's process as a customer's node's agent reports it with each heartbeat
 * (docs/decisions/0385-connected-site-process.md): its site host's `process`, for a site it runs.
 */
export const siteProcessReport = z
  .object({
    site_id: z.string().min(1).max(100),
    status: z.enum(SITE_PROCESS_STATUSES),
    restarts: z.number().int().min(0),
    last_exit: z
      .object({
        code: z.number().int().nullable(),
        signal: z.string().max(50).nullable(),
        at: z.string().datetime(),
        reason: z.literal('oom').optional(),
      })
      .strict()
      .nullable(),
    memory_floor_mb: z.number().int().min(0).nullable(),
    started_at: z.string().datetime().nullable(),
    slept_at: z.string().datetime().nullable(),
  })
  .strict();
export type SiteProcessReport = z.infer<typeof siteProcessReport>;

export const toProcessReport = (siteId: string, p: SiteProcess): SiteProcessReport => ({
  site_id: siteId,
  status: p.status,
  restarts: p.restarts,
  last_exit: p.lastExit,
  memory_floor_mb: p.memoryFloorMb,
  started_at: p.startedAt,
  slept_at: p.sleptAt,
});

/** A report as the platform keeps it: its keys camelCased by rule (core/field-names.ts). */
export const fromProcessReport = (r: SiteProcessReport): SiteProcess & { siteId: string } => camelKeys(r);

/** The bodies of the calls. */
export const agentBodies = {
  heartbeat: z
    .object({
      edge_port: z.number().int().min(1).max(65535).nullable().optional(),
      session: session.optional(),
      /** Absent from older agents and from the hosted node's (its plane's events are published in-process). */
      site_events: z.array(siteEvent).max(MAX_SITE_EVENTS).optional(),
      /** Absent from older agents, the simulated executor's and the hosted node's (its sites are read in-process). */
      site_processes: z.array(siteProcessReport).max(MAX_REPORTED_PROCESSES).optional(),
    })
    .strict(),
  claim: z.object({ session, wait_ms: z.number().int().min(0).max(MAX_CLAIM_WAIT_MS).optional() }).strict(),
  release: z.object({ session }).strict(),
  progress: z.object({ session, detail: z.string().max(1000) }).strict(),
  result: z.object({ session, outcome: taskOutcome }).strict(),
  siteExtras: z.object({ site_ids: z.array(z.string().min(1).max(100)).min(1).max(MAX_EXTRAS_SITES) }).strict(),
  /**
   * What an agent's release host observed (decision 0365): the requests its edge served on releases'
   * addresses (storefront analytics) and releases past the degraded rule. The hosted node's only.
   */
  releaseObservations: z
    .object({
      access: z
        .array(
          z
            .object({
              project_id: z.string().min(1).max(100).nullable(),
              release_id: z.string().min(1).max(100).nullable(),
              at: z.string().datetime(),
              status: z.number().int().min(100).max(599),
              ms: z.number().min(0),
            })
            .strict(),
        )
        .max(MAX_OBSERVED_REQUESTS)
        .optional(),
      degraded: z
        .array(
          z
            .object({
              release_id: z.string().min(1).max(100),
              requests: z.number().int().min(0),
              errors: z.number().int().min(0),
            })
            .strict(),
        )
        .max(100)
        .optional(),
    })
    .strict(),
};
export type AgentBody<K extends keyof typeof agentBodies> = z.infer<(typeof agentBodies)[K]>;

/** The heartbeat's answer (`lease` only on a leased node: the hosted one). */
export interface HeartbeatReply {
  node_id: string;
  name: string;
  status: string;
  lease?: 'held' | 'standby';
  lease_ms?: number;
  heartbeat_interval_ms: number;
  silent_after_ms: number;
}
