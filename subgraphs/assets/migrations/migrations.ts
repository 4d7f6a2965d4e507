import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { Transform } from 'node:stream';
import { PlatformError, badRequest, conflict, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { findPage } from '../../../core/keyset';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { Principal } from '../../../core/principal';
import { sleep } from '../../../core/sleep';
import type { StagedBlob } from '../../../core/blobs/blob-store';
import {
  type ItemCounts,
  type ItemStatus,
  type MigrationDoc,
  type MigrationItemDoc,
  type MigrationModels,
  TERMINAL_STATUSES,
} from './model';
import { type MigrationReportType, type MigrationType, toItem, toMigration } from './types';
import type { Connections, MigrationSource, SourceObject } from '../connections';
import { type AssetDoc, SCOPES } from '../records';
import type { AssetsService } from '../storage';

/** The engine's operation type of a migration run. */
export const MIGRATION_OPERATION = 'assets_migration';
/** A run may take long: its overall deadline (24 h) and its steps' (the same). */
export const MIGRATION_DEADLINE_MS = 24 * 3600 * 1000;
/** Items read per batch of the copy loop (the cancel check runs once per batch). */
const BATCH = 16;
/** Items copied at once by one run. */
export const COPY_CONCURRENCY = 4;
export const MIGRATIONS_LIST_DEFAULT = 25;
export const MIGRATIONS_LIST_MAX = 100;

const migrationNotFound = () => notFound('assets.migration_not_found', 'migration not found');

/** A stable item id from the migration and the source key (UUID-shaped, so it reads like the others). */
export function itemIdOf(migrationId: string, sourceKey: string): string {
  const h = createHash('sha256').update(`${migrationId}\0${sourceKey}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Failure of one item: recorded on it, never failing the run. */
class ItemFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Migrations (spec 4.3): a durable run on the kernel's operation engine copies every object of a
 * connection into a bucket. Per-item state lives in its own collection; each item goes
 * `pending → copying → copied` with single-document conditional writes, and every asset it makes
 * carries the item's id in its metadata, so a run resumed after a crash (or a lost lease) finishes
 * an interrupted item instead of copying it a second time, and never touches a copied one.
 */
export class Migrations {
  constructor(
    readonly m: MigrationModels,
    private readonly assets: AssetsService,
    private readonly connections: Connections,
    private readonly engine: OperationEngine,
    private readonly itemDelayMs: () => number = () => 0,
  ) {}

  // ---- requests -----------------------------------------------------------------------------

  async create(
    p: Principal | null,
    input: { connection: string; bucket?: string | null; folder?: string | null },
  ): Promise<MigrationDoc> {
    const caller = this.assets.writer(p, SCOPES.admin);
    const connection = await this.connections.own(caller.accountId, input.connection);
    const bucket = input.bucket
      ? await this.assets.buckets.get(caller.accountId, input.bucket)
      : await this.assets.buckets.ensureDefault(caller.accountId);
    const folder = (input.folder ?? '').replace(/^\/+|\/+$/g, '');
    if (folder.length > 512) throw badRequest('validation_failed', 'folder is longer than 512 characters');
    const now = new Date();
    const doc: MigrationDoc = {
      _id: newId(),
      accountId: caller.accountId,
      connectionId: connection._id,
      bucketId: bucket._id,
      folder,
      status: 'queued',
      operationId: newId(),
      plan: caller.plan,
      keyId: caller.keyId,
      listed: false,
      error: null,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    await this.m.Migration.create(doc);
    try {
      await this.enqueue(doc);
    } catch (e) {
      await this.m.Migration.deleteOne({ _id: doc._id });
      throw e;
    }
    return doc;
  }

  private enqueue(doc: Pick<MigrationDoc, '_id' | 'accountId' | 'operationId'>) {
    return this.engine.enqueue({
      id: doc.operationId,
      accountId: doc.accountId,
      // Assets are account-scoped: the account stands in for the project (docs/spec-decisions.md).
      projectId: doc.accountId,
      resourceType: 'asset_migration',
      resourceId: doc._id,
      operationType: MIGRATION_OPERATION,
      input: { migrationId: doc._id },
      maxAttempts: 5,
      deadlineMs: MIGRATION_DEADLINE_MS,
    });
  }

  async get(p: Principal | null, id: string): Promise<MigrationDoc> {
    const { accountId } = this.assets.reader(p);
    const doc = await this.m.Migration.findOne({ _id: id, accountId }).lean<MigrationDoc>().exec();
    if (!doc) throw migrationNotFound();
    return doc;
  }

  async list(p: Principal | null, args: { limit?: number | null; cursor?: string | null }) {
    const { accountId } = this.assets.reader(p);
    const limit = Math.min(Math.max(args.limit ?? MIGRATIONS_LIST_DEFAULT, 1), MIGRATIONS_LIST_MAX);
    const page = await findPage<MigrationDoc>(
      this.m.Migration,
      { accountId },
      { field: 'createdAt', binding: 'migrations', position: { value: 'c', id: 'id', form: 'iso' }, limit, cursor: args.cursor },
    );
    return { items: page.items, nextCursor: page.nextCursor ?? '' };
  }

  async counts(migrationId: string): Promise<ItemCounts> {
    const rows = await this.m.Item.aggregate<{ _id: ItemStatus; n: number }>([
      { $match: { migrationId } },
      { $group: { _id: '$status', n: { $sum: 1 } } },
    ]);
    const c: ItemCounts = { total: 0, pending: 0, copying: 0, copied: 0, failed: 0, cancelled: 0 };
    for (const r of rows) {
      c[r._id] = r.n;
      c.total += r.n;
    }
    return c;
  }

  async view(m: MigrationDoc): Promise<MigrationType> {
    return toMigration(m, await this.counts(m._id), this.assets.cfg.baseUrl);
  }

  /** Every item of a migration with its outcome (the report's rows), by source key. */
  async report(p: Principal | null, id: string): Promise<MigrationReportType> {
    const m = await this.get(p, id);
    const [migration, items] = await Promise.all([this.view(m), this.items(m._id)]);
    return { migration, items: items.map(toItem) };
  }

  async items(migrationId: string): Promise<MigrationItemDoc[]> {
    return this.m.Item.find({ migrationId }).sort({ sourceKey: 1 }).lean<MigrationItemDoc[]>().exec();
  }

  /** Stops a queued or running migration: items not yet copied become `cancelled` (409 once it ended). */
  async cancel(p: Principal | null, id: string): Promise<MigrationDoc> {
    const { accountId } = this.assets.writer(p, SCOPES.admin);
    const current = await this.get(p, id);
    const now = new Date();
    const done = await this.m.Migration.findOneAndUpdate(
      { _id: id, accountId, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'cancelled', finishedAt: now, updatedAt: now } },
      { new: true },
    )
      .lean<MigrationDoc>()
      .exec();
    if (!done) {
      throw conflict('assets.migration_not_cancellable', `the migration is ${current.status} and can no longer be cancelled`, {
        status: current.status,
      });
    }
    await this.m.Item.updateMany({ migrationId: id, status: 'pending' }, { $set: { status: 'cancelled', updatedAt: now } });
    return done;
  }

  /** A failed item goes back to `pending`; an ended migration runs again for it (409 otherwise). */
  async retryItem(p: Principal | null, id: string, itemId: string): Promise<MigrationItemDoc> {
    this.assets.writer(p, SCOPES.admin);
    const migration = await this.get(p, id);
    const item = await this.m.Item.findOne({ _id: itemId, migrationId: id }).lean<MigrationItemDoc>().exec();
    if (!item) throw notFound('assets.migration_item_not_found', 'migration item not found');
    if (migration.status === 'cancelled')
      throw conflict('assets.migration_cancelled', 'the migration was cancelled; start another one');
    const now = new Date();
    const updated = await this.m.Item.findOneAndUpdate(
      { _id: itemId, migrationId: id, status: 'failed' },
      { $set: { status: 'pending', error: null, updatedAt: now } },
      { new: true },
    )
      .lean<MigrationItemDoc>()
      .exec();
    if (!updated) {
      throw conflict('assets.migration_item_not_retryable', `the item is ${item.status}; only a failed item can be retried`, {
        status: item.status,
      });
    }
    await this.restartIfEnded(id);
    return updated;
  }

  /** An ended migration with pending items runs again (one conditional write decides who enqueues). */
  private async restartIfEnded(id: string): Promise<void> {
    const operationId = newId();
    const restarted = await this.m.Migration.findOneAndUpdate(
      { _id: id, status: { $in: ['succeeded', 'completed_with_errors', 'failed'] } },
      { $set: { status: 'queued', operationId, finishedAt: null, error: null, updatedAt: new Date() } },
      { new: true },
    )
      .lean<MigrationDoc>()
      .exec();
    if (restarted) await this.enqueue(restarted);
  }

  // ---- the run ------------------------------------------------------------------------------

  /** The executor of MIGRATION_OPERATION. */
  async run(ctx: OperationContext): Promise<unknown> {
    const { migrationId } = ctx.op.input as { migrationId: string };
    const m = await this.m.Migration.findById(migrationId).lean<MigrationDoc>().exec();
    // Gone, cancelled, or superseded by a later run of the same migration: nothing to do.
    if (!m || m.operationId !== ctx.op._id || TERMINAL_STATUSES.includes(m.status)) return { skipped: true };
    const now = new Date();
    await this.m.Migration.updateOne(
      { _id: m._id, operationId: ctx.op._id, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'running', startedAt: m.startedAt ?? now, updatedAt: now } },
    );
    const connection = await this.connections.model.findOne({ _id: m.connectionId, accountId: m.accountId }).lean().exec();
    if (!connection) return this.fail(m, ctx, 'assets.connection_not_found', 'the connection was deleted');
    let source: MigrationSource;
    try {
      source = this.connections.source(connection);
    } catch (e) {
      if (e instanceof PlatformError) return this.fail(m, ctx, e.code, e.message);
      throw e;
    }
    try {
      if (!m.listed) {
        try {
          await ctx.step('list', () => this.listSource(m, source), { timeoutMs: MIGRATION_DEADLINE_MS });
        } catch (e) {
          if (e instanceof PlatformError && !e.retriable && !ctx.signal.aborted) return this.fail(m, ctx, e.code, e.message);
          throw e;
        }
      }
      await ctx.step('copy', () => this.copyAll(m, source, ctx), { timeoutMs: MIGRATION_DEADLINE_MS });
    } finally {
      source.close();
    }
    return ctx.step('finish', () => this.finish(m, ctx));
  }

  private async fail(m: MigrationDoc, ctx: OperationContext, code: string, message: string) {
    const now = new Date();
    await this.m.Migration.updateOne(
      { _id: m._id, operationId: ctx.op._id, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'failed', error: { code, message }, finishedAt: now, updatedAt: now } },
    );
    return { status: 'failed', error_code: code };
  }

  /** Lists the source into items; listing again (after a crash) adds only what is missing. */
  private async listSource(m: MigrationDoc, source: MigrationSource): Promise<{ listed: number }> {
    let cursor: string | null = null;
    let listed = 0;
    do {
      const page = await source.list(cursor);
      const now = new Date();
      const docs = page.objects.map((o: SourceObject) => ({
        _id: itemIdOf(m._id, o.key),
        migrationId: m._id,
        accountId: m.accountId,
        sourceKey: o.key,
        key: m.folder ? `${m.folder}/${o.key}` : o.key,
        status: 'pending',
        sourceSize: o.size,
        sourceEtag: o.etag,
        sourceSha256: o.sha256,
        sourceUrl: o.url ?? null,
        sha256: null,
        size: null,
        assetId: null,
        attempts: 0,
        error: null,
        copiedAt: null,
        createdAt: now,
        updatedAt: now,
      }));
      if (docs.length) await this.m.Item.insertMany(docs, { ordered: false }).catch(ignoreDuplicates);
      listed += docs.length;
      cursor = page.next;
    } while (cursor);
    await this.m.Migration.updateOne({ _id: m._id }, { $set: { listed: true, updatedAt: new Date() } });
    return { listed };
  }

  private async copyAll(m: MigrationDoc, source: MigrationSource, ctx: OperationContext): Promise<{ done: true }> {
    const principal: Principal = {
      accountId: m.accountId,
      accountSlug: '',
      plan: m.plan,
      keyId: m.keyId,
      role: 'member',
      scopes: [SCOPES.write],
    };
    for (;;) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      const now = await this.m.Migration.findById(m._id, { status: 1, operationId: 1 }).lean<MigrationDoc>().exec();
      if (!now || now.status !== 'running' || now.operationId !== ctx.op._id) return { done: true };
      const batch = await this.m.Item.find({ migrationId: m._id, status: { $in: ['pending', 'copying'] } })
        .sort({ _id: 1 })
        .limit(BATCH)
        .lean<MigrationItemDoc[]>()
        .exec();
      if (batch.length === 0) return { done: true };
      // A few items at once: each copy waits mostly on the source and the database.
      let next = 0;
      const lane = async () => {
        while (next < batch.length && !ctx.signal.aborted) {
          const item = batch[next++];
          await this.copyItem(m, item, source, principal, ctx);
          const delay = this.itemDelayMs();
          if (delay > 0) await sleep(delay);
        }
      };
      await Promise.all(Array.from({ length: COPY_CONCURRENCY }, lane));
    }
  }

  /** The asset an earlier attempt of this item made, if any (its metadata names the item). */
  private async madeBy(m: MigrationDoc, item: MigrationItemDoc): Promise<AssetDoc | null> {
    const a = await this.assets.m.Asset.findOne({ accountId: m.accountId, bucketId: m.bucketId, key: item.key }, { outbox: 0 })
      .lean<AssetDoc>()
      .exec();
    return a && a.metadata?.migration_item_id === item._id ? a : null;
  }

  private async markCopied(item: MigrationItemDoc, a: Pick<AssetDoc, '_id' | 'checksum' | 'size'>): Promise<void> {
    const now = new Date();
    await this.m.Item.updateOne(
      { _id: item._id, status: 'copying' },
      {
        $set: { status: 'copied', assetId: a._id, sha256: a.checksum, size: a.size, error: null, copiedAt: now, updatedAt: now },
      },
    );
  }

  private async markFailed(item: MigrationItemDoc, code: string, message: string): Promise<void> {
    await this.m.Item.updateOne(
      { _id: item._id, status: 'copying' },
      { $set: { status: 'failed', error: { code, message: message.slice(0, 500) }, updatedAt: new Date() } },
    );
  }

  private async copyItem(
    m: MigrationDoc,
    item: MigrationItemDoc,
    source: MigrationSource,
    principal: Principal,
    ctx: OperationContext,
  ): Promise<void> {
    const now = new Date();
    if (item.status === 'copying') {
      // An earlier attempt stopped inside this item: finish it rather than copy it again.
      const earlier = await this.madeBy(m, item);
      if (earlier && earlier.status !== 'processing') return this.markCopied(item, earlier);
      if (earlier) {
        // Recorded but its bytes never committed (uploads.ts writes the record first): start over.
        const gone = await this.assets.m.Asset.deleteOne({ _id: earlier._id, status: 'processing' });
        if (gone.deletedCount === 1) await this.assets.uploads.release(m.accountId, earlier.size);
      }
      await this.m.Item.updateOne({ _id: item._id, status: 'copying' }, { $inc: { attempts: 1 }, $set: { updatedAt: now } });
    } else {
      const claimed = await this.m.Item.updateOne(
        { _id: item._id, status: 'pending' },
        { $set: { status: 'copying', updatedAt: now }, $inc: { attempts: 1 } },
      );
      if (claimed.modifiedCount !== 1) return;
    }
    let staged: StagedBlob | null = null;
    try {
      const body = await source.open({
        key: item.sourceKey,
        size: item.sourceSize,
        etag: item.sourceEtag,
        sha256: item.sourceSha256,
        url: item.sourceUrl,
      });
      const md5 = createHash('md5');
      const hashing = new Transform({
        transform(chunk: Buffer, _enc, cb) {
          md5.update(chunk);
          cb(null, chunk);
        },
      });
      body.on('error', (e) => hashing.destroy(e));
      staged = await this.assets.uploads.stage(m.accountId, body.pipe(hashing));
      const md5hex = md5.digest('hex');
      if (item.sourceSize !== null && staged.size !== item.sourceSize)
        throw new ItemFailure('assets.checksum_mismatch', `the source listed ${item.sourceSize} bytes; ${staged.size} arrived`);
      if (item.sourceEtag && /^[0-9a-f]{32}$/.test(item.sourceEtag) && item.sourceEtag !== md5hex)
        throw new ItemFailure('assets.checksum_mismatch', 'the bytes do not match the source ETag (MD5)');
      const asset = await this.assets.uploads.create(principal, staged, posix.basename(item.key), {
        bucket: m.bucketId,
        key: item.key,
        metadata: JSON.stringify({ migration_id: m._id, migration_item_id: item._id, source_key: item.sourceKey }),
        checksum_sha256: item.sourceSha256 ?? undefined,
      });
      this.assets.forget(asset._id);
      this.assets.nudge();
      await this.markCopied(item, asset);
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      if (e instanceof PlatformError && e.code === 'assets.duplicate_key') {
        // Another attempt of this very item got there first (a lost lease): it is copied, once.
        const earlier = await this.madeBy(m, item);
        if (earlier && earlier.status !== 'processing') return this.markCopied(item, earlier);
        return this.markFailed(item, e.code, `key ${item.key} already exists in the bucket`);
      }
      if (e instanceof ItemFailure || e instanceof PlatformError) return this.markFailed(item, e.code, e.message);
      return this.markFailed(item, 'assets.copy_failed', e instanceof Error ? e.message : String(e));
    } finally {
      if (staged) await this.assets.blobs.discard(staged).catch(() => undefined);
    }
  }

  private async finish(m: MigrationDoc, ctx: OperationContext): Promise<unknown> {
    const counts = await this.counts(m._id);
    const status = counts.failed > 0 ? 'completed_with_errors' : 'succeeded';
    const now = new Date();
    await this.m.Migration.updateOne(
      { _id: m._id, operationId: ctx.op._id, status: 'running' },
      { $set: { status, finishedAt: now, updatedAt: now } },
    );
    // A retry that arrived while this run was ending is not left waiting.
    if (await this.m.Item.exists({ migrationId: m._id, status: 'pending' })) await this.restartIfEnded(m._id);
    return { status, copied: counts.copied, failed: counts.failed };
  }
}

function ignoreDuplicates(e: unknown): void {
  const err = e as { code?: number; writeErrors?: { code?: number; err?: { code?: number } }[] };
  const codes = err.writeErrors?.map((w) => w.code ?? w.err?.code) ?? [err.code];
  if (codes.length > 0 && codes.every((c) => c === 11000)) return;
  throw e;
}
