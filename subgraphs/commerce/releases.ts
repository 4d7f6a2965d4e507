import { decodeCursor, encodeCursor } from '../../core/cursors';
import { isUuid, newId } from '../../core/ids';
import type { OperationContext, OperationEngine } from '../../core/operations/engine';
import { sleep } from '../../core/sleep';
import path from 'node:path';
import { type ReleaseHost, type ReleaseRun, type WantedRelease, reconcileReleases, releaseHost } from '../../dataplane/releases';
import { bundleKind, DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import type { ArtifactStore } from './artifacts';
import { type MemoryMax, memoryOverPlan } from './environment-fields';
import { commerceError, commerceNotFound, invalidConfiguration } from './errors';
import { pinEnvironment, processEnv } from './runtime';

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
  /** The data plane's release host, when this process runs the edge and the supervisor. */
  host(): ReleaseHost | null;
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
    const host = this.requireHost();
    if (!host.running(r._id)) {
      const gate = await this.startOnHost(host, connection, r);
      if (!gate.healthy) {
        throw commerceError('COMMERCE_FAILED_HEALTH_GATE', `the release did not answer when started again (${gate.last})`, {
          preview_id: r._id,
        });
      }
      host.markHealthy(r._id);
    }
    host.promote(connection._id, r._id);
    await this.markLive(connection._id, r._id);
    return r;
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
   * Commerce's pass of the data plane's reconcile loop (registered by `CommerceService.useDataPlane`;
   * dataplane/releases.ts `reconcileReleases`): at boot, every 30 s and on a kick, the releases that
   * should run and do not are started again through their health gate from their stored artifacts,
   * production addresses this host does not route yet routed to their live release; a release that
   * does not answer is recorded `failed` (`COMMERCE_FAILED_HEALTH_GATE`). No new deploy is made.
   */
  async reconcile(): Promise<{ started: string[]; failed: string[] }> {
    const host = this.requireHost();
    const wanted: WantedRelease[] = [];
    const docs = await this.wanted();
    for (const r of docs) {
      const connection = await this.d.models.Connection.findById(r.projectId).lean();
      if (!connection) continue;
      wanted.push({
        releaseId: r._id,
        productionOf: r.live ? r.projectId : null,
        healthy: r.status === 'healthy',
        prepare: () => this.prepare(host, connection, r),
        // The pass runs every 30 s: a promotion or a newer preview may have replaced it since `wanted()` read it.
        stillWanted: async () =>
          (await this.wanted()).some((x) => x._id === r._id && (x.live ? x.projectId : null) === (r.live ? r.projectId : null)),
      });
    }
    // A release in its gate may be starting in another process on the same data folder: its directory stays.
    const inGate = await this.d.models.Release.find(
      { status: { $in: ['queued', 'running'] }, artifact: { $ne: null } },
      { _id: 1 },
    ).lean();
    const out = await reconcileReleases(host, wanted, new Set(inGate.map((r) => r._id)));
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

  /** A newer preview turned healthy: older running previews of the project (not serving production) stop. */
  private async supersedePreviews(host: ReleaseHost, r: ReleaseDoc): Promise<void> {
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
    for (const o of older) if (host.running(o._id) && host.productionOf(r.projectId) !== o._id) await host.stop(o._id);
  }

  private requireHost(): ReleaseHost {
    const host = this.d.host();
    if (!host)
      throw commerceError('COMMERCE_OPERATION_FAILED', 'this process runs no data plane (start the platform with `start all`)');
    return host;
  }

  /** Unpacks the artifact and starts the release through its health gate. */
  private async startOnHost(host: ReleaseHost, connection: ConnectionDoc, r: ReleaseDoc) {
    // Starting from the first moment of the unpacking: a reconcile pass neither prunes nor starts it meanwhile.
    return host.start(() => this.prepare(host, connection, r), r._id);
  }

  /** Unpacks the release's artifact from the blob store into its working directory; answers how to run it. */
  private async prepare(host: ReleaseHost, connection: ConnectionDoc, r: ReleaseDoc): Promise<ReleaseRun> {
    const bundle = path.join(host.releaseDir(r._id), 'bundle');
    await this.d.artifacts.unpack(r.artifact!, bundle);
    const kind = bundleKind(bundle);
    if (kind !== connection.kind) {
      throw commerceError(
        'COMMERCE_CONFIG_MISMATCH',
        kind
          ? `the bundle is ${kind === 'app' ? 'an app' : 'a storefront'}, the connection ${connection.kind === 'app' ? 'an app' : 'a storefront'}`
          : 'the bundle holds neither index.js, dist/server/index.js nor server.mjs',
      );
    }
    return {
      releaseId: r._id,
      projectId: r.projectId,
      kind,
      env: processEnv(kind, connection.storeDomain, r.environmentPin ?? null),
      // The limit it was created with (a release made before `memory_mb` existed: the default).
      memoryMb: r.memoryMb ?? undefined,
    };
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
      const host = this.requireHost();
      const r = await this.d.models.Release.findOne(mine).lean();
      const connection = r ? await this.d.models.Connection.findById(r.projectId).lean() : null;
      if (!r || !connection) return { healthy: false, ms: 0, last: 'release or connection gone' };
      const g = await this.startOnHost(host, connection, r);
      if (g.healthy) {
        host.markHealthy(releaseId);
        if (r.environment === 'production' || host.productionOf(r.projectId) === releaseId) {
          host.promote(r.projectId, releaseId);
          await this.markLive(r.projectId, releaseId);
        }
        if (r.environment === 'preview') await this.supersedePreviews(host, r);
      }
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
