import { newId } from '../../core/ids';
import type { IdempotencyStore } from '../../core/idempotency';
import { isDuplicateKey } from '../../core/mongo';
import type { OperationContext, OperationEngine } from '../../core/operations/engine';
import type { OperationDoc } from '../../core/operations/model';
import { sleep } from '../../core/sleep';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import { commerceError, commerceNotFound, invalidConfiguration } from './errors';
import {
  ALL_SECRETS,
  checkEnvironment,
  credentialIdsChanged,
  type EnvironmentBody,
  type MemoryMax,
  type SecretName,
} from './environment-fields';
import {
  CONNECTION_KINDS,
  type ConnectionKind,
  type ConnectionState,
  ENVIRONMENTS,
  type EnvironmentName,
  MAX_BRANCH_LENGTH,
  MAX_DOMAIN_LENGTH,
  MIN_STOREFRONT_API_VERSION,
} from './limits';
import type { CommerceModels, ConnectionDoc, EnvironmentDoc } from './model';
import { COMMERCE_OPERATION_TYPES, operationView, type CommerceOperationView } from './operation-view';
import type { CommercePlatform } from './platform-client';
import { checkSettings } from './settings';

export interface ConnectInput {
  kind: string;
  storeDomain: string;
  developmentBranch?: string | null;
  confirmGenericStorefront?: boolean | null;
  settings?: unknown;
}

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;
// A git branch name: no spaces, no `..`, no leading `-` or `/`, no control characters.
const BRANCH = /^(?![-/])(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9._/-]+(?<![./])$/;

export interface EnvironmentView {
  name: EnvironmentName;
  fields: Record<string, string | null>;
  has: Record<SecretName, boolean>;
  /** Its releases' memory limit in MiB: the one set, else the default. */
  memoryMb: number;
  verification: { state: ConnectionState; operationId: string | null; verifiedAt: Date | null; errorCode: string | null };
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface ConnectionView {
  projectId: string;
  kind: ConnectionKind;
  storeDomain: string;
  developmentBranch: string | null;
  confirmGenericStorefront: boolean;
  settings: Record<string, unknown>;
  storefrontSettings: Record<string, unknown>;
  state: ConnectionState;
  operation: CommerceOperationView | null;
  environments: EnvironmentView[];
  createdAt: Date;
  updatedAt: Date;
}

export interface ConnectionDeps {
  models: CommerceModels;
  engine: OperationEngine;
  platform: CommercePlatform;
  idempotency: IdempotencyStore;
  /** Where the commerce platform should send this deployment's webhooks. */
  receiverUrl(): string;
  stepDelayMs(): number;
}

/**
 * Connections, write-only environments and verification bound to the credentials (spec 2.2, 3.2).
 * Connect and verify answer 202 with a durable operation on the kernel engine.
 */

/** The record a sealed environment secret belongs to (its AAD). */
export const secretAad = (environmentId: string, field: string) => `commerce_environments:${environmentId}:${field}`;

export class Connections {
  constructor(private readonly d: ConnectionDeps) {}

  async get(projectId: string): Promise<ConnectionDoc> {
    const c = await this.d.models.Connection.findById(projectId).lean();
    if (!c) throw commerceNotFound('commerce connection');
    return c;
  }

  /** Spec 2.2 connect rules; the store must exist on the platform (checked now, so a typo is a 422 at once). */
  private async checkConnect(input: ConnectInput) {
    if (!CONNECTION_KINDS.includes(input.kind as ConnectionKind)) {
      throw invalidConfiguration(`kind must be one of ${CONNECTION_KINDS.join(', ')}`, { field: 'kind' });
    }
    const kind = input.kind as ConnectionKind;
    const storeDomain = String(input.storeDomain ?? '')
      .trim()
      .toLowerCase();
    if (storeDomain.length > MAX_DOMAIN_LENGTH || !DOMAIN.test(storeDomain)) {
      throw invalidConfiguration('store_domain must be a domain name such as example-shop.example', { field: 'store_domain' });
    }
    const branch = input.developmentBranch ?? null;
    const confirm = input.confirmGenericStorefront ?? null;
    if (kind === 'app') {
      if (confirm !== null)
        throw invalidConfiguration('confirm_generic_storefront is for storefronts only', { field: 'confirm_generic_storefront' });
      if (!branch || branch.length > MAX_BRANCH_LENGTH || !BRANCH.test(branch)) {
        throw invalidConfiguration('an app needs development_branch, a git branch name', { field: 'development_branch' });
      }
    } else {
      if (branch !== null) throw invalidConfiguration('development_branch is for apps only', { field: 'development_branch' });
      if (confirm !== true) {
        throw invalidConfiguration('a storefront needs confirm_generic_storefront: true', {
          field: 'confirm_generic_storefront',
        });
      }
    }
    const settings = checkSettings(input.settings);
    return { kind, storeDomain, developmentBranch: branch, confirmGenericStorefront: confirm === true, settings };
  }

  async connect(
    accountId: string,
    projectId: string,
    input: ConnectInput,
    idempotencyKey: string | null,
  ): Promise<CommerceOperationView> {
    const checked = await this.checkConnect(input);
    // The first answer is the operation as enqueued (`queued`), even if a worker has already
    // claimed it; a replay answers the operation as it is now.
    let enqueued: OperationDoc | null = null;
    const run = async () => {
      enqueued = await this.startConnect(accountId, projectId, checked);
      return { operationId: enqueued._id };
    };
    const { operationId } = idempotencyKey
      ? (await this.d.idempotency.run(`commerce:${projectId}:connect`, idempotencyKey, checked, run)).value
      : await run();
    return enqueued ? operationView(enqueued) : this.operation(operationId);
  }

  private async startConnect(
    accountId: string,
    projectId: string,
    c: Awaited<ReturnType<Connections['checkConnect']>>,
  ): Promise<OperationDoc> {
    const store = await this.d.platform.lookupStore(c.storeDomain);
    if (!store) throw invalidConfiguration('the store does not exist on the commerce platform', { field: 'store_domain' });
    if (c.kind === 'storefront') checkStorefrontRuntime(store.storefrontApiVersion);
    const operationId = newId();
    const now = new Date();
    const before = await this.d.models.Connection.findOneAndUpdate(
      { _id: projectId },
      {
        $set: { ...c, accountId, connectOperationId: operationId, updatedAt: now },
        $setOnInsert: { storefrontSettings: {}, createdAt: now },
      },
      { upsert: true, new: false },
    ).lean();
    // A connection that changes kind starts over: the other kind's environments mean nothing now.
    if (before && before.kind !== c.kind) await this.d.models.Environment.deleteMany({ projectId });
    return this.d.engine.enqueue({
      id: operationId,
      accountId,
      projectId,
      resourceType: 'commerce_connection',
      resourceId: projectId,
      operationType: COMMERCE_OPERATION_TYPES.connect,
      input: { storeDomain: c.storeDomain },
    });
  }

  /** The connect operation: confirm the store, then subscribe the platform's receiver to its webhooks. */
  async runConnect(ctx: OperationContext): Promise<unknown> {
    const { storeDomain } = ctx.op.input as { storeDomain: string };
    await ctx.step('lookup_store', async () => {
      const store = await this.d.platform.lookupStore(storeDomain);
      if (!store) throw invalidConfiguration('the store does not exist on the commerce platform');
      return { name: store.name };
    });
    await ctx.step('subscribe_webhooks', async () => {
      await this.d.platform.subscribeWebhooks(storeDomain, this.d.receiverUrl());
      return { subscribed: true };
    });
    return { store_domain: storeDomain };
  }

  async operation(operationId: string): Promise<CommerceOperationView> {
    const op = await this.d.engine.get(operationId);
    if (!op) throw commerceNotFound('operation');
    return operationView(op);
  }

  async view(projectId: string): Promise<ConnectionView> {
    const c = await this.get(projectId);
    const [op, envs] = await Promise.all([
      this.d.engine.get(c.connectOperationId),
      this.d.models.Environment.find({ projectId }).lean<EnvironmentDoc[]>(),
    ]);
    const environments = ENVIRONMENTS.map((n) => envs.find((e) => e.name === n))
      .filter((e): e is EnvironmentDoc => Boolean(e))
      .map(environmentView);
    return {
      projectId,
      kind: c.kind,
      storeDomain: c.storeDomain,
      developmentBranch: c.developmentBranch,
      confirmGenericStorefront: c.confirmGenericStorefront,
      settings: c.settings ?? {},
      storefrontSettings: c.storefrontSettings ?? {},
      state: connectionState(op?.status ?? 'pending', environments),
      operation: op ? operationView(op) : null,
      environments,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
    };
  }

  private environmentName(connection: ConnectionDoc, name: string): EnvironmentName {
    if (!ENVIRONMENTS.includes(name as EnvironmentName)) {
      throw invalidConfiguration(`environment must be one of ${ENVIRONMENTS.join(', ')}`, { environment: name });
    }
    if (connection.kind === 'app' && name === 'preview') {
      throw invalidConfiguration('preview is an environment of storefronts only', { environment: name });
    }
    return name as EnvironmentName;
  }

  /**
   * PUT semantics for the non-secret fields (an omitted one is cleared); secrets omitted or empty
   * keep their stored value. Every update bumps `revision`; a changed credential resets the
   * verification to `pending` (`memory_mb` is no credential). The write is conditional on the
   * revision read (concurrent PUTs: one wins, the other re-reads and applies on top).
   */
  async putEnvironment(projectId: string, name: string, body: EnvironmentBody, memory: MemoryMax): Promise<EnvironmentView> {
    const connection = await this.get(projectId);
    const env = this.environmentName(connection, name);
    const checked = checkEnvironment(connection.kind, env, body, memory);
    const id = `${projectId}:${env}`;
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await this.d.models.Environment.findById(id).lean();
      const now = new Date();
      const sealed: Record<string, string> = { ...(existing?.secrets ?? {}) };
      let credentialsChanged = credentialIdsChanged(existing?.fields ?? {}, checked.fields);
      for (const [k, v] of Object.entries(checked.secrets)) {
        const stored = sealed[k];
        // Bound to this environment and field: a sealed value copied elsewhere does not open.
        if (!stored || decryptSecret(stored, secretAad(id, k)) !== v) credentialsChanged = true;
        sealed[k] = encryptSecret(v, secretAad(id, k));
      }
      const verification =
        existing && !credentialsChanged
          ? existing.verification
          : { status: 'pending' as const, operationId: null, revision: null, errorCode: null, verifiedAt: null };
      if (!existing) {
        const doc: EnvironmentDoc = {
          _id: id,
          projectId,
          name: env,
          fields: checked.fields,
          secrets: sealed,
          memoryMb: checked.memoryMb,
          revision: 1,
          verification,
          createdAt: now,
          updatedAt: now,
        };
        try {
          await this.d.models.Environment.create(doc);
          return environmentView(doc);
        } catch (e) {
          if (isDuplicateKey(e)) continue;
          throw e;
        }
      }
      const updated = await this.d.models.Environment.findOneAndUpdate(
        { _id: id, revision: existing.revision },
        {
          $set: { fields: checked.fields, secrets: sealed, memoryMb: checked.memoryMb, verification, updatedAt: now },
          $inc: { revision: 1 },
        },
        { new: true },
      ).lean();
      if (updated) return environmentView(updated);
    }
    throw commerceError('COMMERCE_OPERATION_FAILED', 'the environment is being changed by other requests; try again', {}, true);
  }

  /** 202: a verification bound to the environment's current revision. */
  async verify(
    accountId: string,
    projectId: string,
    name: string,
    idempotencyKey: string | null,
  ): Promise<CommerceOperationView> {
    const connection = await this.get(projectId);
    const env = this.environmentName(connection, name);
    let enqueued: OperationDoc | null = null;
    const run = async () => {
      enqueued = await this.startVerify(accountId, projectId, env);
      return { operationId: enqueued._id };
    };
    const { operationId } = idempotencyKey
      ? (await this.d.idempotency.run(`commerce:${projectId}:verify`, idempotencyKey, { environment: env }, run)).value
      : await run();
    return enqueued ? operationView(enqueued) : this.operation(operationId);
  }

  private async startVerify(accountId: string, projectId: string, env: EnvironmentName): Promise<OperationDoc> {
    const doc = await this.d.models.Environment.findById(`${projectId}:${env}`).lean();
    if (!doc) throw commerceNotFound(`${env} environment`);
    const operationId = newId();
    await this.d.models.Environment.updateOne(
      { _id: doc._id, revision: doc.revision },
      { $set: { 'verification.status': 'pending', 'verification.operationId': operationId, 'verification.errorCode': null } },
    );
    return this.d.engine.enqueue({
      id: operationId,
      accountId,
      projectId,
      resourceType: 'commerce_environment',
      resourceId: doc._id,
      operationType: COMMERCE_OPERATION_TYPES.verify,
      input: { environment: env, revision: doc.revision },
    });
  }

  /**
   * The verify operation (spec 3.2): when execution starts, the environment must still be at the
   * revision the request saw, else the verification fails (`COMMERCE_CONFIG_MISMATCH`); the
   * credentials are checked against the commerce platform over HTTP; the result is recorded only
   * if the revision still holds (a change during the check fails it the same way).
   */
  async runVerify(ctx: OperationContext): Promise<unknown> {
    const { environment, revision } = ctx.op.input as { environment: EnvironmentName; revision: number };
    const id = `${ctx.op.projectId}:${environment}`;
    const changed = () =>
      commerceError('COMMERCE_CONFIG_MISMATCH', 'the environment changed after the verification was requested; verify again', {
        environment,
      });
    try {
      await sleep(this.d.stepDelayMs(), ctx.signal);
      await ctx.step('check_binding', async () => {
        const doc = await this.d.models.Environment.findById(id).lean();
        if (!doc || doc.revision !== revision) throw changed();
        return { revision };
      });
      await ctx.step('check_credentials', async () => {
        const [doc, connection] = await Promise.all([this.d.models.Environment.findById(id).lean(), this.get(ctx.op.projectId)]);
        if (!doc || doc.revision !== revision) throw changed();
        await this.checkCredentials(connection, doc);
        return { checked: true };
      });
      await ctx.step('record_verification', async () => {
        const res = await this.d.models.Environment.updateOne(
          { _id: id, revision, 'verification.operationId': ctx.op._id },
          {
            $set: {
              'verification.status': 'ready',
              'verification.revision': revision,
              'verification.errorCode': null,
              'verification.verifiedAt': new Date(),
            },
          },
        );
        if (res.matchedCount === 0) throw changed();
        return { state: 'ready' };
      });
      return { environment, state: 'ready' };
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === 'COMMERCE_INVALID_CREDENTIALS' || code === 'COMMERCE_INVALID_CONFIGURATION') {
        await this.d.models.Environment.updateOne(
          { _id: id, revision, 'verification.operationId': ctx.op._id },
          { $set: { 'verification.status': 'invalid', 'verification.revision': revision, 'verification.errorCode': code } },
        );
      }
      throw e;
    }
  }

  private async checkCredentials(connection: ConnectionDoc, doc: EnvironmentDoc): Promise<void> {
    const secret = (name: SecretName) => (doc.secrets[name] ? decryptSecret(doc.secrets[name], secretAad(doc._id, name)) : null);
    const bad = (message: string) => commerceError('COMMERCE_INVALID_CREDENTIALS', message, { environment: doc.name });
    if (connection.kind === 'app') {
      const token = secret('automation_token');
      if (!token) throw bad('automation_token is not set for this environment');
      if (!(await this.d.platform.checkAdminToken(connection.storeDomain, token))) {
        throw bad('the commerce platform refused the automation_token');
      }
      return;
    }
    const tokens = (['public_storefront_token', 'private_storefront_token'] as const).filter((n) => secret(n));
    if (tokens.length === 0) throw bad('a storefront token is not set for this environment');
    for (const n of tokens) {
      if (!(await this.d.platform.checkStorefrontToken(connection.storeDomain, secret(n)!))) {
        throw bad(`the commerce platform refused the ${n}`);
      }
    }
  }

  async storefrontSettings(projectId: string, settings: unknown) {
    const c = await this.get(projectId);
    if (c.kind !== 'storefront') {
      throw commerceError('COMMERCE_CONFIG_MISMATCH', 'storefront settings apply to storefront connections only');
    }
    const checked = checkSettings(settings);
    const now = new Date();
    await this.d.models.Connection.updateOne({ _id: projectId }, { $set: { storefrontSettings: checked, updatedAt: now } });
    return { settings: checked, updatedAt: now };
  }
}

/**
 * The hosted storefront runtime speaks storefront API versions from `MIN_STOREFRONT_API_VERSION`
 * on; a store on an older one cannot be served (422 `COMMERCE_UNSUPPORTED_HYDROGEN_RUNTIME`).
 */
export function checkStorefrontRuntime(version: string): void {
  if (!/^\d{4}-\d{2}$/.test(version) || version < MIN_STOREFRONT_API_VERSION) {
    throw commerceError(
      'COMMERCE_UNSUPPORTED_HYDROGEN_RUNTIME',
      `the store's storefront API version ${version || '(unknown)'} is older than the hosted runtime supports`,
      { storefront_api_version: version || null, minimum_version: MIN_STOREFRONT_API_VERSION },
    );
  }
}

/** Spec 3.2 states of a connection, from its connect operation and its environments' verifications. */
export function connectionState(connectStatus: string, environments: EnvironmentView[]): ConnectionState {
  if (connectStatus === 'failed') return 'invalid';
  if (connectStatus !== 'completed') return 'pending';
  const states = environments.map((e) => e.verification.state);
  if (states.includes('invalid')) return 'invalid';
  if (states.includes('ready')) return 'ready';
  return 'pending';
}

export function environmentView(doc: EnvironmentDoc): EnvironmentView {
  const has = Object.fromEntries(ALL_SECRETS.map((s) => [s, Boolean(doc.secrets?.[s])])) as Record<SecretName, boolean>;
  const v = doc.verification;
  return {
    name: doc.name,
    fields: doc.fields ?? {},
    has,
    memoryMb: doc.memoryMb ?? DEFAULT_RELEASE_MEMORY_MB,
    verification: {
      state: v.status,
      operationId: v.operationId ?? null,
      verifiedAt: v.verifiedAt ?? null,
      errorCode: v.errorCode ?? null,
    },
    revision: doc.revision,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}
