import { createHmac } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Connection } from 'mongoose';
import type { BlobStore } from '../../core/blobs/blob-store';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import type { Config } from '../../core/config';
import { IdempotencyStore } from '../../core/idempotency';
import type { OperationEngine } from '../../core/operations/engine';
import type { Ports } from '../../core/ports';
import { newId } from '../../core/ids';
import { projectRoot } from '../../core/paths';
import type { Plan, Principal } from '../../core/principal';
import type { AccessEntry } from '../../dataplane/releases';
import { edgePortFromEnv } from '../../dataplane/edge';
import { ConnectedNodes } from '../../nodes/registry';
import type { HostedReleases } from '../../nodes/releases';
import { DEFAULT_NODE_WAIT_MS, NodeTasks, nodeTaskModel } from '../../nodes/tasks';
import { type ArtifactQuota, ArtifactStore, DEFAULT_ARTIFACT_QUOTA, MAX_ARTIFACT_BYTES } from './artifacts';
import { CommerceAccess } from './access';
import { type ConnectInput, Connections } from './connections';
import type { EnvironmentBody, MemoryMax } from './environment-fields';
import { commerceError, commerceNotFound, invalidConfiguration } from './errors';
import { DEFAULT_MEMORY_MAX_MB } from './limits';
import { commerceModels, type CommerceModels } from './model';
import { isCommerceOperation, operationView } from './operation-view';
import { Observations } from './observations';
import { type CommercePlatform, HttpCommercePlatform } from './platform-client';
import { Releases } from './releases';
import { DEPLOYMENT_HEALTH, type DeploymentHealth } from './stand-in';
import { StandInControl } from './stand-in-control';

/** The inbound webhook receiver's path on the bridge's listener. */
export const WEBHOOK_RECEIVER_PATH = '/api/v1/commerce/webhooks';

export interface CommerceSettings {
  /** `false` or `0` switches the feature off; anything else (or unset) leaves it on. */
  COMMERCE_ENABLED?: 'true' | 'false' | '1' | '0';
  COMMERCE_PLATFORM_URL?: string;
  COMMERCE_WEBHOOK_SECRET?: string;
  COMMERCE_STANDIN_PORT?: number;
  /** Simulated infrastructure delay of a step (deploy, between health probes), ms. */
  SIMULATED_STEP_DELAY_MS: number;
  /** Health-gate time of a bundle release (default 60 s). */
  COMMERCE_HEALTH_GATE_MS?: number;
  /** Per-account artifact quota by plan (decision 0271; defaults in `DEFAULT_ARTIFACT_QUOTA`). */
  COMMERCE_ARTIFACT_QUOTA_BYTES_FREE?: number;
  COMMERCE_ARTIFACT_QUOTA_BYTES_PRO?: number;
  COMMERCE_ARTIFACT_QUOTA_COUNT_FREE?: number;
  COMMERCE_ARTIFACT_QUOTA_COUNT_PRO?: number;
  /** The largest `memory_mb` of an environment by plan (defaults in `DEFAULT_MEMORY_MAX_MB`). */
  COMMERCE_MEMORY_MAX_MB_FREE?: number;
  COMMERCE_MEMORY_MAX_MB_PRO?: number;
}

export interface CommerceDeps {
  conn: Connection;
  engine: OperationEngine;
  ports: Ports;
  config: Config;
  settings: CommerceSettings;
  /** Replaces the HTTP adapter (a real platform's adapter, or a test double). */
  platform?: CommercePlatform;
  /** Where release artifacts are kept (default: the filesystem store under `<DATA_DIR>/commerce/blobs`). */
  blobs?: BlobStore;
}

/**
 * The shared webhook key of the platform's app on the commerce platform: `COMMERCE_WEBHOOK_SECRET`,
 * else derived from the internal signing key, so the stand-in started beside the platform (and any
 * process of the same deployment) agrees on it without one more setting.
 */
export function webhookSecretOf(settings: CommerceSettings, config: Config): string {
  return (
    settings.COMMERCE_WEBHOOK_SECRET ??
    `whsec_${createHmac('sha256', config.INTERNAL_SIGNING_KEY).update('commerce-webhooks').digest('base64')}`
  );
}

/** Commerce hosting (spec 2.2, 3.2, 4.2, 5.4, 6.3, 7.2, 8): every route's rule, behind one access check. */
export class CommerceService {
  readonly models: CommerceModels;
  readonly connections: Connections;
  readonly releases: Releases;
  readonly observations: Observations;
  readonly control: StandInControl;
  readonly access: CommerceAccess;
  readonly webhookSecret: string;
  readonly artifacts: ArtifactStore;
  /** The bridge's address when it listens in this process (set by the data plane). */
  bridgeAddress: () => string | null = () => null;

  constructor(private readonly d: CommerceDeps) {
    this.models = commerceModels(d.conn);
    this.webhookSecret = webhookSecretOf(d.settings, d.config);
    const platform = d.platform ?? new HttpCommercePlatform(() => this.platformUrl(), this.webhookSecret);
    this.control = new StandInControl(() => this.platformUrl());
    const stepDelayMs = () => d.settings.SIMULATED_STEP_DELAY_MS;
    this.access = new CommerceAccess(d.ports, () => !['false', '0'].includes(d.settings.COMMERCE_ENABLED ?? 'true'));
    this.connections = new Connections({
      models: this.models,
      engine: d.engine,
      platform,
      idempotency: new IdempotencyStore(d.conn, {
        conflict: 'COMMERCE_IDEMPOTENCY_CONFLICT',
        inProgress: 'COMMERCE_IDEMPOTENCY_CONFLICT',
      }),
      receiverUrl: () => `${this.publicBaseUrl().replace(/\/$/, '')}${WEBHOOK_RECEIVER_PATH}`,
      stepDelayMs,
    });
    this.artifacts = new ArtifactStore(d.blobs ?? new FsBlobStore(this.dataDir('blobs')), this.models, this.dataDir('uploads'));
    this.releases = new Releases({
      models: this.models,
      engine: d.engine,
      deployer: this.control,
      stepDelayMs,
      artifacts: this.artifacts,
      // A release's machine steps are tasks of the hosted node (docs/decisions/0325-nodes-module.md).
      tasks: new NodeTasks({ tasks: nodeTaskModel(d.conn), nodes: new ConnectedNodes(d.conn), waitMs: DEFAULT_NODE_WAIT_MS }),
      edgeUrl: (host) => `http://${host}:${this.edgePort()}/`,
    });
    this.observations = new Observations(this.models, () => this.webhookSecret);
  }

  private dataDir(name: string): string {
    return path.resolve(projectRoot(), this.d.config.DATA_DIR, 'commerce', name);
  }

  /** The edge's port: this process's data plane's where it runs one, else EDGE_PORT. */
  private edgePort(): number {
    return this.d.ports.has('dataPlane') ? Number(new URL(this.d.ports.get('dataPlane').edgeUrl).port) : edgePortFromEnv();
  }

  /** Where the hosted node keeps releases' working directories (`<DATA_DIR>/commerce/releases/<release id>/`). */
  releaseDir(releaseId: string): string {
    return path.join(this.dataDir('releases'), releaseId);
  }

  /**
   * What the hosted node's agent runs bundle releases with (the `hostedReleases` port;
   * docs/decisions/0130-commerce-runtime.md, 0325-nodes-module.md): production-address requests
   * become analytics samples (batched, one insert per flush), a healthy release past the degraded
   * rule is recorded `degraded`; a release's run and bundle are what the agent API answers an agent
   * holding its task (decision 0365).
   */
  hostedReleases(): HostedReleases {
    const Traffic = this.models.Traffic;
    const Release = this.models.Release;
    const host: HostedReleases['host'] = {
      releasesRoot: this.dataDir('releases'),
      healthGateMs: this.d.settings.COMMERCE_HEALTH_GATE_MS,
      // A storefront reaches the commerce platform (or its loopback stand-in) through one binding (decision 0272).
      commercePlatformUrl: () => this.d.settings.COMMERCE_PLATFORM_URL,
      // The artifact retention rule (subgraphs/commerce/artifacts.ts), hourly.
      housekeeping: () => this.artifacts.sweep(),
      async onAccess(batch: AccessEntry[]) {
        const bySecond = new Map<string, { projectId: string; at: Date; requests: number; errors: number }>();
        for (const e of batch) {
          if (!e.projectId) continue;
          const at = Math.floor(e.at.getTime() / 1000) * 1000;
          const k = `${e.projectId}:${at}`;
          const s = bySecond.get(k) ?? { projectId: e.projectId, at: new Date(at), requests: 0, errors: 0 };
          s.requests += 1;
          if (e.status >= 500) s.errors += 1;
          bySecond.set(k, s);
        }
        if (bySecond.size === 0) return;
        await Traffic.insertMany([...bySecond.values()].map((s) => ({ _id: newId(), ...s })));
      },
      onDegraded(releaseId, window) {
        void Release.updateOne(
          { _id: releaseId, status: 'healthy' },
          {
            $set: {
              status: 'degraded',
              errorMessage: `${window.errors} of ${window.requests} requests in the last 60 s answered 5xx`,
              updatedAt: new Date(),
            },
          },
        ).catch(() => undefined);
      },
    };
    return {
      host,
      describe: (releaseId) =>
        this.releases.describe(releaseId, {
          gateMs: this.d.settings.COMMERCE_HEALTH_GATE_MS,
          commercePlatformUrl: this.d.settings.COMMERCE_PLATFORM_URL,
        }),
      bundle: (releaseId) => this.releases.bundle(releaseId),
      stillWanted: (r) => this.releases.stillWanted(r),
      // What an agent outside this process observed, through the agent API: the same sinks.
      async observed({ access, degraded }) {
        if (access.length) await host.onAccess!(access);
        for (const d of degraded) host.onDegraded!(d.releaseId, d);
      },
    };
  }

  /**
   * Commerce's pass of the data plane's reconcile loop, where this process runs one: the releases that
   * should run come back in the background (production addresses routed again), as a task of the
   * hosted node; the platform does not wait for releases to boot. Artifacts of the earlier layout move
   * into the store before the first pass; the retention sweep runs after it. The pass runs again
   * every 30 s and on kicks (docs/decisions/0155-site-reconcile.md). Answers how to stop it.
   */
  reconcileOnDataPlane(): () => void {
    if (!this.d.ports.has('dataPlane')) return () => undefined;
    const reconciler = this.d.ports.get('dataPlane').reconciler;
    const stopping = new AbortController();
    let unregister: (() => void) | undefined;
    let swept = false;
    const pass = async () => {
      await this.releases.reconcile(stopping.signal);
      if (swept) return;
      swept = true;
      await this.artifacts.sweep();
    };
    void this.artifacts
      .importLegacy(this.dataDir('artifacts'))
      .catch(() => undefined)
      .then(() => this.artifacts.adoptUnowned())
      .catch(() => undefined)
      .then(() => {
        if (!stopping.signal.aborted) unregister = reconciler.register('commerce', pass);
      })
      .catch(() => undefined);
    return () => {
      stopping.abort();
      unregister?.();
    };
  }

  /** Where the commerce platform reaches this deployment: BASE_URL, else the bridge of this process, else the default. */
  publicBaseUrl(): string {
    return this.d.config.BASE_URL ?? this.bridgeAddress() ?? this.d.config.baseUrl;
  }

  /** The commerce platform's address (the local stand-in's when the platform started one). */
  platformUrl(): string {
    const url = this.d.settings.COMMERCE_PLATFORM_URL;
    if (!url) throw commerceError('COMMERCE_OPERATION_FAILED', 'COMMERCE_PLATFORM_URL is not set and no local stand-in runs');
    return url;
  }

  async connection(p: Principal | null, projectId: string) {
    await this.access.check(p, projectId, false);
    return this.connections.view(projectId);
  }

  async connect(p: Principal | null, projectId: string, input: ConnectInput, idempotencyKey: string | null) {
    const principal = await this.access.check(p, projectId, true);
    return this.connections.connect(principal.accountId, projectId, input, idempotencyKey);
  }

  async operation(p: Principal | null, projectId: string, operationId: string) {
    await this.access.check(p, projectId, false);
    const op = await this.d.engine.get(operationId).catch(() => null);
    if (!op || op.projectId !== projectId || !isCommerceOperation(op)) throw commerceNotFound('operation');
    return operationView(op);
  }

  async putEnvironment(p: Principal | null, projectId: string, environment: string, body: EnvironmentBody) {
    const principal = await this.access.check(p, projectId, true);
    return this.connections.putEnvironment(projectId, environment, body, this.memoryMax(principal.plan));
  }

  /** The largest `memory_mb` of a plan (docs/decisions/0273-tenant-sandbox.md): the default, or `COMMERCE_MEMORY_MAX_MB_*`. */
  memoryMax(plan: Plan): MemoryMax {
    const s = this.d.settings;
    const set = plan === 'pro' ? s.COMMERCE_MEMORY_MAX_MB_PRO : s.COMMERCE_MEMORY_MAX_MB_FREE;
    return { plan, maxMb: set ?? DEFAULT_MEMORY_MAX_MB[plan] };
  }

  async verify(p: Principal | null, projectId: string, environment: string, idempotencyKey: string | null) {
    const principal = await this.access.check(p, projectId, true);
    return this.connections.verify(principal.accountId, projectId, environment, idempotencyKey);
  }

  async listReleases(p: Principal | null, projectId: string, limit?: number | null, cursor?: string | null) {
    await this.access.check(p, projectId, false);
    return this.releases.list(projectId, limit ?? undefined, cursor ?? null);
  }

  async retryRelease(p: Principal | null, projectId: string, releaseId: string) {
    await this.access.check(p, projectId, true);
    return this.releases.view(await this.releases.retry(projectId, releaseId));
  }

  async promote(p: Principal | null, projectId: string, previewId: string) {
    await this.access.check(p, projectId, true);
    const connection = await this.connections.get(projectId);
    return this.releases.view(await this.releases.promote(connection, previewId));
  }

  async listWebhooks(p: Principal | null, projectId: string, limit?: number | null, cursor?: string | null) {
    await this.access.check(p, projectId, false);
    return this.observations.list(projectId, limit ?? undefined, cursor ?? null);
  }

  async webhook(p: Principal | null, projectId: string, webhookId: string) {
    await this.access.check(p, projectId, false);
    return this.observations.get(projectId, webhookId);
  }

  async putStorefrontSettings(p: Principal | null, projectId: string, settings: unknown) {
    await this.access.check(p, projectId, true);
    return this.connections.storefrontSettings(projectId, settings);
  }

  async analytics(p: Principal | null, projectId: string, range: string | null) {
    await this.access.check(p, projectId, false);
    await this.connections.get(projectId);
    return this.observations.analytics(projectId, range);
  }

  /** `platform commerce deploy`: a release of the project's connection, as a deploy pipeline would create it. */
  async deploy(projectId: string, environment: string, health: string) {
    if (!DEPLOYMENT_HEALTH.includes(health as DeploymentHealth)) {
      throw invalidConfiguration(`health must be one of ${DEPLOYMENT_HEALTH.join(', ')}`);
    }
    const connection = await this.connections.get(projectId);
    return this.releases.deploy(connection, environment, health as DeploymentHealth);
  }

  /**
   * `platform commerce deploy --bundle DIR`: packs the bundle into the artifact store, held by the
   * project's account (the operator's command: counted in the account's usage, not refused by its
   * quota), and releases it.
   */
  async deployBundle(projectId: string, environment: string, dir: string) {
    const connection = await this.connections.get(projectId);
    const artifact = await this.artifacts.pack(dir, { accountId: connection.accountId, quota: null });
    const r = await this.releases.deployArtifact(connection, environment, artifact.sha256);
    return { release: r, artifact };
  }

  /** The artifact quota of a plan (decision 0271): the defaults, or the `COMMERCE_ARTIFACT_QUOTA_*` settings. */
  artifactQuota(plan: Plan): ArtifactQuota {
    const s = this.d.settings;
    const d = DEFAULT_ARTIFACT_QUOTA[plan];
    return plan === 'pro'
      ? { bytes: s.COMMERCE_ARTIFACT_QUOTA_BYTES_PRO ?? d.bytes, count: s.COMMERCE_ARTIFACT_QUOTA_COUNT_PRO ?? d.count }
      : { bytes: s.COMMERCE_ARTIFACT_QUOTA_BYTES_FREE ?? d.bytes, count: s.COMMERCE_ARTIFACT_QUOTA_COUNT_FREE ?? d.count };
  }

  /**
   * `PUT …/commerce/artifacts`, before a byte of the body is read: the key may write to the project
   * (401, 402, 403, 404 first), and a declared `Content-Length` over 64 MiB is refused (413).
   */
  async mayUploadArtifact(authorization: string | undefined, projectId: string, contentLength?: string): Promise<Principal> {
    const m = /^Bearer\s+(\S+)$/i.exec(authorization ?? '');
    const principal = m ? await this.d.ports.get('authenticator').authenticate(m[1]) : null;
    const checked = await this.access.check(principal, projectId, true);
    if (contentLength !== undefined && Number(contentLength) > MAX_ARTIFACT_BYTES) {
      throw commerceError('COMMERCE_PAYLOAD_TOO_LARGE', 'the bundle is larger than 64 MiB', { max_bytes: MAX_ARTIFACT_BYTES });
    }
    return checked;
  }

  /**
   * `PUT …/commerce/artifacts`: a bundle archive uploaded by a writer of the project, streamed to
   * disk and stored by content address, held by the key's account within its plan's quota. The
   * answer does not tell whether the bytes were stored before (decision 0271).
   */
  async uploadArtifact(authorization: string | undefined, projectId: string, body: Readable) {
    const principal = await this.mayUploadArtifact(authorization, projectId);
    return this.artifacts.put(body, { accountId: principal.accountId, quota: this.artifactQuota(principal.plan) });
  }

  /**
   * A release of an artifact already in the store (the GraphQL mutation and its REST route); its
   * environment's `memory_mb` must still be within the caller's plan (a plan lowered since it was set).
   */
  async createRelease(p: Principal | null, projectId: string, environment: string, artifact: string) {
    const principal = await this.access.check(p, projectId, true);
    const connection = await this.connections.get(projectId);
    const r = await this.releases.deployArtifact(connection, environment, artifact, this.memoryMax(principal.plan));
    return this.releases.view(r);
  }

  /** `platform commerce traffic`: storefront requests recorded for analytics. */
  async recordTraffic(projectId: string, requests: number, errors: number, minutesAgo: number) {
    if (!(await this.d.ports.get('projects').findProject(projectId))) throw commerceNotFound('project');
    return this.observations.recordTraffic(projectId, requests, errors, minutesAgo);
  }
}
