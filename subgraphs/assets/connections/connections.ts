import type { Model } from 'mongoose';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import { decryptSecret, encryptSecret } from '../../../core/secrets';
import { type HttpConfig, type S3Config, parseConfig, parseSecrets } from './config';
import { CONNECTION_TYPES, type ConnectionDoc, type ConnectionType } from './model';
import { HttpSource, type MigrationSource, S3Source, type SourceOptions } from './sources';
import { requiredRevision, revisionStale } from '../revisions';
import type { AssetsService } from '../storage';
import { SCOPES } from '../records';

export interface ConnectionInput {
  name?: string;
  type?: string;
  config?: Record<string, unknown> | null;
  secrets?: Record<string, unknown> | null;
}

const connectionNotFound = () => notFound('assets.connection_not_found', 'connection not found');
const NAME_RE = /^[\w .-]{1,100}$/;

/** Binds a sealed value to its record and field: copied into another record it does not open. */
const aadOf = (id: string, field: string) => `asset_connections:${id}:${field}`;

/**
 * Connections to external storage (spec 4.3): an S3-compatible bucket or an HTTP origin. Secret
 * values are accepted on create and update only, sealed at rest (core/secrets.ts) and never
 * returned: the views say only which ones are set.
 */
export class Connections {
  constructor(
    readonly model: Model<ConnectionDoc>,
    private readonly assets: AssetsService,
    private readonly sourceOptions: () => SourceOptions,
  ) {}

  private seal(id: string, type: ConnectionType, current: Record<string, string>, raw: unknown): Record<string, string> {
    const next = { ...current };
    for (const [field, value] of Object.entries(parseSecrets(type, raw))) {
      if (value === undefined) continue;
      if (value === null) delete next[field];
      else next[field] = encryptSecret(value, aadOf(id, field));
    }
    return next;
  }

  /** The source a connection describes; the check of its address happens here (400 when refused). */
  source(c: ConnectionDoc): MigrationSource {
    const open = (field: string) => (c.secrets?.[field] ? decryptSecret(c.secrets[field], aadOf(c._id, field)) : null);
    const opts = this.sourceOptions();
    return c.type === 's3'
      ? new S3Source(c.config as S3Config, open('secret_access_key'), opts)
      : new HttpSource(c.config as HttpConfig, open('bearer_token'), opts);
  }

  async create(p: Principal | null, input: ConnectionInput): Promise<ConnectionDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    if (!input.name || !NAME_RE.test(input.name))
      throw badRequest('validation_failed', 'name: 1–100 letters, digits, space . _ -');
    if (!CONNECTION_TYPES.includes(input.type as ConnectionType))
      throw badRequest('validation_failed', `type must be one of ${CONNECTION_TYPES.join(', ')}`);
    const type = input.type as ConnectionType;
    const id = newId();
    const now = new Date();
    const doc: ConnectionDoc = {
      _id: id,
      accountId,
      name: input.name,
      type,
      config: parseConfig(type, input.config),
      secrets: this.seal(id, type, {}, input.secrets),
      status: 'unverified',
      lastVerifiedAt: null,
      lastError: null,
      revision: 1,
      createdAt: now,
      updatedAt: now,
    };
    // The address must pass the outbound rules' shape checks before anything is stored.
    this.source(doc).close();
    try {
      await this.model.create(doc);
    } catch (e) {
      if (isDuplicateKey(e)) throw new PlatformError('assets.connection_exists', 409, `a connection named ${input.name} exists`);
      throw e;
    }
    return doc;
  }

  async list(p: Principal | null): Promise<ConnectionDoc[]> {
    const { accountId } = this.assets.reader(p);
    return this.model.find({ accountId }).sort({ createdAt: 1, _id: 1 }).lean<ConnectionDoc[]>().exec();
  }

  async get(p: Principal | null, id: string): Promise<ConnectionDoc> {
    const { accountId } = this.assets.reader(p);
    return this.own(accountId, id);
  }

  async own(accountId: string, id: string): Promise<ConnectionDoc> {
    const c = await this.model.findOne({ _id: id, accountId }).lean<ConnectionDoc>().exec();
    if (!c) throw connectionNotFound();
    return c;
  }

  /**
   * Changes the name, merges `config` keys, sets (or with null removes) secrets. `If-Match` is
   * honoured when sent; a change of address or secret makes the connection `unverified` again.
   */
  async update(
    p: Principal | null,
    id: string,
    ifMatch: string | null | undefined,
    input: ConnectionInput,
  ): Promise<ConnectionDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const current = await this.own(accountId, id);
    const revision = ifMatch ? requiredRevision(ifMatch) : current.revision;
    if (input.type !== undefined && input.type !== current.type)
      throw badRequest('validation_failed', 'type cannot be changed; create another connection');
    const set: Partial<ConnectionDoc> = { updatedAt: new Date() };
    if (input.name !== undefined) {
      if (!NAME_RE.test(input.name)) throw badRequest('validation_failed', 'name: 1–100 letters, digits, space . _ -');
      set.name = input.name;
    }
    if (input.config) set.config = parseConfig(current.type, { ...current.config, ...input.config });
    if (input.secrets) set.secrets = this.seal(id, current.type, current.secrets ?? {}, input.secrets);
    if (set.config || set.secrets) Object.assign(set, { status: 'unverified', lastError: null });
    this.source({ ...current, ...set } as ConnectionDoc).close();
    let updated: ConnectionDoc | null;
    try {
      updated = await this.model
        .findOneAndUpdate({ _id: id, accountId, revision }, { $set: set, $inc: { revision: 1 } }, { new: true })
        .lean<ConnectionDoc>()
        .exec();
    } catch (e) {
      if (isDuplicateKey(e)) throw new PlatformError('assets.connection_exists', 409, `a connection named ${input.name} exists`);
      throw e;
    }
    if (!updated) throw revisionStale(current.revision);
    return updated;
  }

  async remove(p: Principal | null, id: string): Promise<ConnectionDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const c = await this.own(accountId, id);
    const res = await this.model.deleteOne({ _id: id, accountId });
    if (res.deletedCount !== 1) throw connectionNotFound();
    return c;
  }

  /** Reaches the source now and records the outcome; a failure answers 422 with the reason. */
  async verify(p: Principal | null, id: string): Promise<ConnectionDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const c = await this.own(accountId, id);
    const source = this.source(c);
    let failure: PlatformError | null = null;
    try {
      await source.verify();
    } catch (e) {
      if (!(e instanceof PlatformError)) throw e;
      failure = e;
    } finally {
      source.close();
    }
    const now = new Date();
    const updated = await this.model
      .findOneAndUpdate(
        { _id: id, accountId },
        {
          $set: {
            status: failure ? 'failed' : 'verified',
            lastVerifiedAt: now,
            lastError: failure?.message ?? null,
            updatedAt: now,
          },
        },
        { new: true },
      )
      .lean<ConnectionDoc>()
      .exec();
    if (!updated) throw connectionNotFound();
    if (failure) {
      throw new PlatformError('assets.connection_verification_failed', 422, failure.message, {
        ...failure.details,
        reason: failure.code,
      });
    }
    return updated;
  }
}
