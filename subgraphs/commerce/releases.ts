import { decodeCursor, encodeCursor } from '../../core/cursors';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { isUuid, newId } from '../../core/ids';
import type { OperationContext, OperationEngine } from '../../core/operations/engine';
import { sleep } from '../../core/sleep';
import type { AgentRelease, ReleaseDelivery, ReleaseWork } from '../../dataplane/agent/wire';
import { type GateResult, releaseHost } from '../../dataplane/releases';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import type { NodeTasks } from '../../nodes/tasks';
import type { ArtifactStore } from './artifacts';
import { type MemoryMax, memoryOverPlan } from './environment-fields';
import { commerceError, commerceNotFound, invalidConfiguration } from './errors';
import { describeRelease, onHostedNode, type ReleaseStep } from './release-node';
import { pinEnvironment } from './runtime';

/** A cursor this listing did not issue is a 422, like any other malformed input here. */
export function readCursor<T extends Record<string, unknown>>(cursor: string, binding: string): T {
  try {
    return decodeCursor<T>(cursor, binding);
  } catch {
    throw invalidConfiguration('cursor is not valid for this list', { field: 'cursor' });
  }
}
import {
  DEFAULT_PAGE,
  ENVIRONMENTS,
  type EnvironmentName,
  MAX_PAGE,
  RETRYABLE_RELEASE_STATUSES,
  type ReleaseStatus,
} from './limits';
import type { CommerceModels, ConnectionDoc, ReleaseDoc } from './model';
import { COMMERCE_OPERATION_TYPES } from './operation-view';
import type { DeploymentHealth } from './stand-in';

/** The health gate probes a release this many times, a step delay apart: 3. */
export const HEALTH_PROBES = 3;
/** One probe waits at most: 5 s. */
export const HEALTH_PROBE_TIMEOUT_MS = 5_000;

export type ProbeResult = 'ok' | 'degraded' | 'failing';

/**
 * Spec 3.2 health gate: every probe ok → `healthy`; every probe failing → `failed`
 * (`COMMERCE_FAILED_HEALTH_GATE`); anything between, or a `degraded` answer → `degraded`.
 */
export function gateOutcome(probes: ProbeResult[]): 'healthy' | 'degraded' | 'failed' {
  if (probes.every((p) => p === 'ok')) return 'healthy';
  if (probes.every((p) => p === 'failing')) return 'failed';
  return 'degraded';
}

export async function probeHealth(url: string): Promise<ProbeResult> {
  try {
    const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(HEALTH_PROBE_TIMEOUT_MS) });
    if (!res.ok) {
      await res.body?.cancel();
      return 'failing';
    }
    const body = (await res.json().catch(() => ({}))) as { status?: string };
    return body.status === 'degraded' ? 'degraded' : 'ok';
  } catch {
    return 'failing';
  }
}

export interface ReleaseView {
  id: string;
  projectId: string;
  environment: EnvironmentName;
  status: ReleaseStatus;
  previewId: string | null;
  sourcePreviewId: string | null;
  operationId: string;
  attempts: number;
  errorCode: string | null;
  errorMessage: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  url: string | null;
  artifact: string | null;
  memoryMb: number | null;
}

export interface Deployer {
  /** Creates the deployment whose health endpoint the gate probes (a deploy pipeline's job). */
  createDeployment(storeDomain: string, health: DeploymentHealth): Promise<{ deployment_id: string; health_url: string }>;
}

export interface ReleaseDeps {
  models: CommerceModels;
  engine: OperationEngine;
  deployer: Deployer;
  stepDelayMs(): number;
  /** Where bundles are stored by content address. */
  artifacts: ArtifactStore;
  /**
   * Where a release's machine steps go (docs/decisions/0325-nodes-module.md): tasks of the hosted
   * node, whose agent runs them with the release host on its data plane (nodes/hosted.ts).
   */
  tasks: NodeTasks;
  /** The public address of a host name on the edge. */
  edgeUrl(host: string): string;
}

const TERMINAL = new Set<ReleaseStatus>(['healthy', 'failed', 'degraded', 'cancelled']);

/** Releases (spec 3.2): `queued → running → healthy | failed | degraded | cancelled`, through a health gate. */
export class Releases {
  constructor(private readonly d: ReleaseDeps) {}

  /** What `platform commerce deploy` does, as a deploy pipeline would. */
  async deploy(connection: ConnectionDoc, environment: string, health: DeploymentHealth): Promise<ReleaseDoc> {
    if (!ENVIRONMENTS.includes(environment as EnvironmentName)) {
      throw invalidConfiguration(`environment must be one of ${ENVIRONMENTS.join(', ')}`);
    }
    if (connection.kind === 'app' && environment === 'preview') {
      throw invalidConfiguration('preview is an environment of storefronts only');
    }
    const deployment = await this.d.deployer.createDeployment(connection.storeDomain, health);
    const id = newId();
    return this.create(connection, {
      environment: environment as EnvironmentName,
      healthUrl: deployment.health_url,
      deploymentId: deployment.deployment_id,
      previewId: environment === 'preview' ? id : null,
      sourcePreviewId: null,
      id,
    });
  }

  /**
   * A release of a stored bundle (docs/decisions/0130-commerce-runtime.md): it pins the environment
   * as it is now, its memory limit included, and runs for real on the data plane, behind its own
   * address on the edge. Given the caller's plan, a `memory_mb` over it is refused (422).
   */
  async deployArtifact(
    connection: ConnectionDoc,
    environment: string,
    artifact: string,
    memory?: MemoryMax,
  ): Promise<ReleaseDoc> {
    if (!ENVIRONMENTS.includes(environment as EnvironmentName)) {
      throw invalidConfiguration(`environment must be one of ${ENVIRONMENTS.join(', ')}`, { field: 'environment' });
    }
    if (connection.kind === 'app' && environment === 'preview') {
      throw invalidConfiguration('preview is an environment of storefronts only', { field: 'environment' });
    }
    const env = await this.d.models.Environment.findById(`${connection._id}:${environment}`).lean();
    const memoryMb = env?.memoryMb ?? DEFAULT_RELEASE_MEMORY_MB;
    if (memory && memoryMb > memory.maxMb) throw memoryOverPlan(memory, { environment });
    // Only an artifact the account uploaded itself; one it does not hold answers as an unknown one (decision 0271).
    if (!(await this.d.artifacts.take(connection.accountId, artifact))) throw commerceNotFound('artifact');
    const id = newId();
    return this.create(connection, {
      id,
      environment: environment as EnvironmentName,
      healthUrl: this.d.edgeUrl(releaseHost(id)),
      deploymentId: artifact,
      previewId: environment === 'preview' ? id : null,
      sourcePreviewId: null,
      artifact,
      environmentPin: pinEnvironment(env),
      memoryMb,
    });
  }

  /** The public address of a release. */
  url(r: ReleaseDoc): string {
    return r.artifact ? this.d.edgeUrl(releaseHost(r._id)) : r.healthUrl;
  }

  private async create(
    connection: ConnectionDoc,
    r: Pick<ReleaseDoc, 'environment' | 'healthUrl' | 'deploymentId' | 'previewId' | 'sourcePreviewId'> & {
      id: string;
      artifact?: string;
      environmentPin?: ReleaseDoc['environmentPin'];
      memoryMb?: number;
    },
  ): Promise<ReleaseDoc> {
    const now = new Date();
    const doc: ReleaseDoc = {
      _id: r.id,
      projectId: connection._id,
      accountId: connection.accountId,
      environment: r.environment,
      status: 'queued',
      healthUrl: r.healthUrl,
      deploymentId: r.deploymentId,
      previewId: r.previewId,
      sourcePreviewId: r.sourcePreviewId,
      operationId: newId(),
      attempts: 1,
      errorCode: null,
      errorMessage: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
      artifact: r.artifact ?? null,
      environmentPin: r.environmentPin ?? null,
      memoryMb: r.memoryMb ?? null,
    };
    await this.d.models.Release.create(doc);
    await this.enqueue(doc);
    return doc;
  }

  private enqueue(doc: ReleaseDoc) {
    return this.d.engine.enqueue({
      id: doc.operationId,
      accountId: doc.accountId,
      projectId: doc.projectId,
      resourceType: 'commerce_release',
      resourceId: doc._id,
      operationType: COMMERCE_OPERATION_TYPES.release,
      input: { releaseId: doc._id, environment: doc.environment },
    });
  }

  async find(projectId: string, releaseId: string): Promise<ReleaseDoc> {
    const r = isUuid(releaseId) ? await this.d.models.Release.findById(releaseId).lean() : null;
    if (!r || r.projectId !== projectId) throw commerceNotFound('release');
    return r;
  }

  /** Guarded retry: only a `failed` or `degraded` release runs its health gate again. */
  async retry(projectId: string, releaseId: string): Promise<ReleaseDoc> {
    const r = await this.find(projectId, releaseId);
    const refuse = (status: ReleaseStatus) =>
      commerceError('COMMERCE_FAILED_HEALTH_GATE', `only a failed or degraded release can be retried (this one is ${status})`, {
        release_id: r._id,
        status,
      });
    if (!RETRYABLE_RELEASE_STATUSES.includes(r.status)) throw refuse(r.status);
    const operationId = newId();
    const updated = await this.d.models.Release.findOneAndUpdate(
      { _id: r._id, status: r.status, operationId: r.operationId },
      {
        $set: { status: 'queued', operationId, errorCode: null, errorMessage: null, finishedAt: null, updatedAt: new Date() },
        $inc: { attempts: 1 },
      },
      { new: true },
    ).lean();
    // Another retry won the race: this one sees the release as it now is.
    if (!updated) throw refuse((await this.find(projectId, releaseId)).status);
    await this.enqueue(updated);
    return updated;
  }

  /** Promotes a healthy preview: a production release of the same build, through the gate again. */
  async promote(connection: ConnectionDoc, previewId: string): Promise<ReleaseDoc> {
    if (!isUuid(previewId)) throw invalidConfiguration('preview_id must be a UUID', { field: 'preview_id' });
    if (connection.kind !== 'storefront') {
      throw commerceError('COMMERCE_CONFIG_MISMATCH', 'promotions apply to storefront connections only');
    }
    const preview = await this.d.models.Release.findById(previewId).lean();
    // A bundle release of any environment may be promoted (a rollback promotes an earlier one).
    if (!preview || preview.projectId !== connection._id || (preview.previewId !== previewId && !preview.artifact)) {
      throw commerceNotFound('preview');
    }
    if (preview.status !== 'healthy') {
      throw commerceError(
        'COMMERCE_FAILED_HEALTH_GATE',
        `only a healthy preview can be promoted (this one is ${preview.status})`,
        {
          preview_id: previewId,
          status: preview.status,
        },
      );
    }
    if (preview.artifact) return this.switchProduction(connection, preview);
    return this.create(connection, {
      id: newId(),
      environment: 'production',
      healthUrl: preview.healthUrl,
      deploymentId: preview.deploymentId,
      previewId: null,
      sourcePreviewId: previewId,
    });
  }

  /** Points the production address at a healthy bundle release (started again first when it was stopped). */
  private async switchProduction(connection: ConnectionDoc, r: ReleaseDoc): Promise<ReleaseDoc> {
    const gate = (await this.onNode('release_promote', `promote:${r._id}:${randomUUID()}`, {
      releases: [{ releaseId: r._id, projectId: connection._id, production: true, healthy: true }],
    })) as { healthy: boolean; last: string | null };
    if (!gate.healthy) {
      throw commerceError('COMMERCE_FAILED_HEALTH_GATE', `the release did not answer when started again (${gate.last})`, {
        preview_id: r._id,
      });
    }
    await this.markLive(connection._id, r._id);
    return r;
  }

  /** Runs a release step on the hosted node (release-node.ts); answers its result. */
  private onNode(step: ReleaseStep, operationId: string, release: ReleaseWork, signal?: AbortSignal, attempt = 1) {
    return onHostedNode(this.d.tasks, step, operationId, release, signal, attempt);
  }

  /** Records which release serves the project's production address (one per project). */
  private async markLive(projectId: string, releaseId: string): Promise<void> {
    await this.d.models.Release.updateOne({ _id: releaseId }, { $set: { live: true } });
    await this.d.models.Release.updateMany({ projectId, live: true, _id: { $ne: releaseId } }, { $set: { live: false } });
  }

  /**
   * What should run on the data plane (docs/spec-decisions.md, commerce releases at boot): each
   * project's live production release, and each project's newest healthy preview (older previews
   * are superseded when a newer one turns healthy). Degraded releases still serve, so they count.
   */
  private async wanted(): Promise<ReleaseDoc[]> {
    const live = await this.d.models.Release.find({ live: true, artifact: { $ne: null } }).lean();
    const previews = await this.d.models.Release.find({
      environment: 'preview',
      artifact: { $ne: null },
      status: { $in: ['healthy', 'degraded'] },
    })
      .sort({ createdAt: -1, _id: -1 })
      .lean();
    const newest = new Map<string, ReleaseDoc>();
    for (const p of previews) if (!newest.has(p.projectId)) newest.set(p.projectId, p);
    const ids = new Set(live.map((r) => r._id));
    return [...live, ...[...newest.values()].filter((p) => !ids.has(p._id))];
  }

  /**
   * Commerce's pass of the data plane's reconcile loop (registered by `CommerceService.reconcileOnDataPlane`;
   * a `release_reconcile` task of the hosted node, whose agent runs dataplane/releases.ts
   * `reconcileReleases`): at boot, every 30 s and on a kick, the releases that
   * should run and do not are started again through their health gate from their stored artifacts,
   * production addresses this host does not route yet routed to their live release; a release that
   * does not answer is recorded `failed` (`COMMERCE_FAILED_HEALTH_GATE`). No new deploy is made.
   */
  async reconcile(signal?: AbortSignal): Promise<{ started: string[]; failed: string[] }> {
    const wanted: AgentRelease[] = [];
    const docs = await this.wanted();
    for (const r of docs) {
      if (!(await this.d.models.Connection.exists({ _id: r.projectId }))) continue;
      wanted.push({ releaseId: r._id, projectId: r.projectId, production: Boolean(r.live), healthy: r.status === 'healthy' });
    }
    // A release in its gate may be starting in another process on the same data folder: its directory stays.
    const inGate = await this.d.models.Release.find(
      { status: { $in: ['queued', 'running'] }, artifact: { $ne: null } },
      { _id: 1 },
    ).lean();
    const out = (await this.onNode(
      'release_reconcile',
      `reconcile:${randomUUID()}`,
      { releases: wanted, keep: inGate.map((r) => r._id) },
      signal,
    )) as { started: string[]; failed: Array<{ releaseId: string; reason: string }> };
    for (const f of out.failed) {
      const r = docs.find((x) => x._id === f.releaseId)!;
      await this.d.models.Release.updateOne(
        { _id: f.releaseId, operationId: r.operationId },
        {
          $set: {
            status: 'failed',
            errorCode: 'COMMERCE_FAILED_HEALTH_GATE',
            errorMessage: `the release did not answer when the data plane started it again (${f.reason})`,
            updatedAt: new Date(),
          },
        },
      );
    }
    return { started: out.started, failed: out.failed.map((f) => f.releaseId) };
  }

  /**
   * Whether the release is still wanted as the reconcile task named it, read right before the node
   * starts it: the pass runs every 30 s, and a promotion or a newer preview may have replaced it since.
   */
  async stillWanted(w: AgentRelease): Promise<boolean> {
    return (await this.wanted()).some(
      (x) => x._id === w.releaseId && (x.live ? x.projectId : null) === (w.production ? w.projectId : null),
    );
  }

  /** A newer preview: the project's older previews, which the node stops unless they serve production. */
  private async olderPreviews(r: ReleaseDoc): Promise<string[]> {
    const older = await this.d.models.Release.find(
      {
        projectId: r.projectId,
        environment: 'preview',
        artifact: { $ne: null },
        _id: { $ne: r._id },
        createdAt: { $lte: r.createdAt },
      },
      { _id: 1 },
    ).lean();
    return older.map((o) => o._id);
  }

  /** How a release runs, for the agent that holds its task (nodes/releases.ts, decision 0365). */
  describe(releaseId: string, host: { gateMs?: number; commercePlatformUrl?: string }): Promise<ReleaseDelivery> {
    return describeRelease(this.d.models, releaseId, host);
  }

  /** A release's bundle (its artifact's bytes), for the agent that holds its task. */
  async bundle(releaseId: string): Promise<{ stream: Readable; bytes: number }> {
    const r = await this.d.models.Release.findById(releaseId, { artifact: 1 }).lean();
    if (!r?.artifact) throw commerceError('COMMERCE_NOT_FOUND', `release ${releaseId} has no bundle`);
    return this.d.artifacts.read(r.artifact);
  }

  async list(projectId: string, limit = DEFAULT_PAGE, cursor: string | null = null) {
    const size = Math.min(Math.max(1, Math.floor(limit) || DEFAULT_PAGE), MAX_PAGE);
    const filter: Record<string, unknown> = { projectId };
    if (cursor) {
      const p = readCursor<{ t: string; id: string }>(cursor, `releases:${projectId}`);
      filter.$or = [{ createdAt: { $lt: new Date(p.t) } }, { createdAt: new Date(p.t), _id: { $lt: p.id } }];
    }
    const rows = await this.d.models.Release.find(filter)
      .sort({ createdAt: -1, _id: -1 })
      .limit(size + 1)
      .lean();
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    const nextCursor =
      rows.length > size && last
        ? encodeCursor({ t: last.createdAt.toISOString(), id: last._id }, `releases:${projectId}`)
        : null;
    return { items: await Promise.all(page.map((r) => this.view(r))), nextCursor };
  }

  /** A release whose operation ended failed before the gate recorded anything shows as `failed`. */
  async view(r: ReleaseDoc): Promise<ReleaseView> {
    let { status, errorCode, errorMessage } = r;
    if (!TERMINAL.has(status)) {
      const op = await this.d.engine.get(r.operationId);
      if (op?.status === 'failed') {
        status = 'failed';
        errorCode = op.errorCode;
        errorMessage = op.errorMessage;
      }
    }
    return {
      id: r._id,
      projectId: r.projectId,
      environment: r.environment,
      status,
      previewId: r.previewId,
      sourcePreviewId: r.sourcePreviewId,
      operationId: r.operationId,
      attempts: r.attempts,
      errorCode,
      errorMessage,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
      finishedAt: r.finishedAt,
      url: r.artifact ? this.url(r) : null,
      artifact: r.artifact ?? null,
      memoryMb: r.artifact ? (r.memoryMb ?? DEFAULT_RELEASE_MEMORY_MB) : null,
    };
  }

  /**
   * The release operation: start (a newer release of the same environment cancels a queued one),
   * deploy, health gate, record. Every release write is conditional on this operation still being
   * the release's, so a stale attempt never overwrites a retry.
   */
  async runRelease(ctx: OperationContext): Promise<unknown> {
    const { releaseId } = ctx.op.input as { releaseId: string };
    const mine = { _id: releaseId, operationId: ctx.op._id };
    const started = await ctx.step('start', async () => {
      const r = await this.d.models.Release.findOne(mine).lean();
      if (!r) return { cancelled: true };
      const newer = await this.d.models.Release.findOne({
        projectId: r.projectId,
        environment: r.environment,
        createdAt: { $gt: r.createdAt },
      }).lean();
      if (newer && r.status === 'queued') {
        await this.d.models.Release.updateOne(
          { ...mine, status: 'queued' },
          { $set: { status: 'cancelled', finishedAt: new Date(), updatedAt: new Date() } },
        );
        return { cancelled: true };
      }
      await this.d.models.Release.updateOne(
        { ...mine, status: 'queued' },
        { $set: { status: 'running', updatedAt: new Date() } },
      );
      return { cancelled: false, healthUrl: r.healthUrl, bundle: Boolean(r.artifact) };
    });
    if (started.cancelled) return { release_id: releaseId, status: 'cancelled' };
    if (started.bundle) return this.runBundle(ctx, releaseId);
    await ctx.step('deploy', () => sleep(this.d.stepDelayMs(), ctx.signal).then(() => ({ deployed: true })));
    const outcome = await ctx.step('health_gate', async () => {
      const probes: ProbeResult[] = [];
      for (let i = 0; i < HEALTH_PROBES; i++) {
        if (i > 0) await sleep(this.d.stepDelayMs(), ctx.signal);
        probes.push(await probeHealth(started.healthUrl!));
      }
      return { outcome: gateOutcome(probes), probes };
    });
    const failed = outcome.outcome === 'failed';
    const message = failed ? `the release failed its health gate (${outcome.probes.join(', ')})` : null;
    await ctx.step('record', async () => {
      await this.d.models.Release.updateOne(
        { ...mine, status: 'running' },
        {
          $set: {
            status: outcome.outcome,
            errorCode: failed ? 'COMMERCE_FAILED_HEALTH_GATE' : null,
            errorMessage: message,
            finishedAt: new Date(),
            updatedAt: new Date(),
          },
        },
      );
      return { status: outcome.outcome };
    });
    if (failed) throw commerceError('COMMERCE_FAILED_HEALTH_GATE', message!, { release_id: releaseId });
    return { release_id: releaseId, status: outcome.outcome };
  }

  /** A bundle release: started on the data plane, gated by a probe through the edge, live when production. */
  private async runBundle(ctx: OperationContext, releaseId: string): Promise<unknown> {
    const mine = { _id: releaseId, operationId: ctx.op._id };
    const gate = await ctx.step('health_gate', async () => {
      const r = await this.d.models.Release.findOne(mine).lean();
      const connection = r ? await this.d.models.Connection.findById(r.projectId).lean() : null;
      if (!r || !connection) return { healthy: false, ms: 0, last: 'release or connection gone' };
      // The hosted node starts it through its gate, routes production to it and stops older previews.
      const g = (await this.onNode(
        'release_start',
        ctx.op._id,
        {
          releases: [{ releaseId, projectId: r.projectId, production: r.environment === 'production', healthy: false }],
          ...(r.environment === 'preview' ? { supersede: await this.olderPreviews(r) } : {}),
        },
        ctx.signal,
        ctx.op.attempt,
      )) as GateResult & { last: string | null; promoted: boolean };
      if (g.healthy && g.promoted) await this.markLive(r.projectId, releaseId);
      return g.healthy ? { healthy: true, ms: g.ms, last: null } : { healthy: false, ms: g.ms, last: g.last };
    });
    const failed = !gate.healthy;
    const message = failed ? `the release did not answer GET / with 2xx through the edge within 60 s (${gate.last})` : null;
    await ctx.step('record', async () => {
      await this.d.models.Release.updateOne(
        { ...mine, status: 'running' },
        {
          $set: {
            status: failed ? 'failed' : 'healthy',
            errorCode: failed ? 'COMMERCE_FAILED_HEALTH_GATE' : null,
            errorMessage: message,
            finishedAt: new Date(),
            updatedAt: new Date(),
          },
        },
      );
      return { status: failed ? 'failed' : 'healthy' };
    });
    if (failed) throw commerceError('COMMERCE_FAILED_HEALTH_GATE', message!, { release_id: releaseId });
    return { release_id: releaseId, status: 'healthy', gate_ms: gate.ms };
  }
}
