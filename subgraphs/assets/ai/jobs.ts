import { Readable } from 'node:stream';
import { conflict, isPlatformError, notFound, PlatformError } from '../../../core/errors';
import { newId } from '../../../core/ids';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import type { OcrEngine } from './ocr';
import { OCR_ENGINE, OCR_LANGUAGE } from './ocr';
import type { AiConfigs } from './config';
import { evaluateModel, gatedProvider } from './evaluation';
import type { AiDataDoc, AiJobDoc, AiModels } from './model';
import { type AiAction, creditsOf, periodOf, PRICE_MICROS } from './pricing';
import type { AiSpend } from './spend';
import { type AssetDoc, SCOPES } from '../records';
import type { AiCharge } from '../usage';
import type { AssetsService } from '../storage';

/** Operation type of every AI job on the kernel engine. */
export const AI_OPERATION_TYPE = 'assets.ai';
/** Actions that run the configured model, and so pass its evaluation gate first. */
const MODEL_ACTIONS: AiAction[] = ['analyze', 'moderation', 'smart-crop', 'background-remove', 'generation'];

export const aiJobNotFound = () => notFound('assets.job_not_found', 'job not found');
export const notProcessable = (status: string) =>
  conflict('assets.not_processable', `the asset is ${status}: only ready assets are processed`, { status });

interface Output {
  sha256: string;
  region: string;
  bucketId: string;
  key: string;
  name: string;
}
interface Computed {
  result: Record<string, unknown>;
  outputs: Output[];
}

export interface SubmitInput {
  action: AiAction;
  assetId: string | null;
  input?: Record<string, unknown>;
  /** Priced units (images of a generation). */
  units?: number;
  /** Chosen by the caller (a generation's id is planned under its Idempotency-Key). */
  jobId?: string;
}

/**
 * AI jobs (spec 4.3: AI actions, text extraction, generations): admitted synchronously (enabled
 * action, evaluation gate, asset state, spend cap → 409/402), then run as a durable operation on
 * the kernel engine. The executor computes, then debits the AI-credits ledger once, then publishes.
 *
 * Exactly once: the ledger entry's idempotency key is `assets.ai:<job>:<attempt>` (a crash or a
 * retry after the debit finds the same entry, never a second draw), and the engine records each
 * step's completion, so a resumed run does not compute or publish twice. Output assets get keys
 * fixed by the job (`ai/<job>/…`): a resumed publish finds them (duplicate key) instead of copying.
 */
export class AiJobs {
  constructor(
    readonly m: AiModels,
    private readonly assets: AssetsService,
    private readonly engine: OperationEngine,
    private readonly ports: Ports,
    private readonly configs: AiConfigs,
    private readonly spend: AiSpend,
    private readonly ocr: OcrEngine,
    /** Called once per charged action when its job succeeds (the usage counters, `views/usage.ts`). */
    private readonly onCharged?: (c: AiCharge) => Promise<void>,
  ) {}

  /** The one job route; `/ai/jobs/{id}` answers the same job. */
  statusUrl = (id: string) => `${this.assets.cfg.baseUrl}/api/v1/assets/jobs/${id}`;

  /** Admission: every refusal happens here, before anything is spent. */
  async submit(p: Principal | null, s: SubmitInput): Promise<AiJobDoc> {
    const principal = this.assets.writer(p, s.action === 'generation' ? SCOPES.generate : SCOPES.process);
    const { accountId } = principal;
    if (s.assetId) {
      const asset = await this.assets.get(p, s.assetId);
      if (asset.status !== 'ready') throw notProcessable(asset.status);
      if (asset.type !== 'image')
        throw conflict('assets.not_an_image', `${s.action} works on images; this asset is ${asset.type}`, { type: asset.type });
    }
    const config = await this.configs.of(accountId);
    if (!config.enabledActions.includes(s.action))
      throw conflict('assets.ai_action_not_enabled', `the AI action ${s.action} is not enabled in /ai/config`, {
        action: s.action,
        enabled_actions: config.enabledActions,
      });
    if (MODEL_ACTIONS.includes(s.action)) {
      const evaluation = await evaluateModel(config.model);
      if (!evaluation.passed)
        throw conflict(
          'assets.ai_model_not_evaluated',
          `the configured model ${config.model} has not passed the evaluation gate`,
          {
            model: config.model,
            failed_cases: evaluation.cases.filter((c) => !c.passed).map((c) => c.name),
          },
        );
    }
    const now = new Date();
    const period = periodOf(now);
    const price = PRICE_MICROS[s.action] * (s.units ?? 1);
    const job: AiJobDoc = {
      _id: s.jobId ?? newId(),
      accountId,
      assetId: s.assetId,
      action: s.action,
      model: config.model,
      status: 'queued',
      attempt: 1,
      priceMicros: price,
      period,
      input: s.input ?? {},
      result: null,
      outputAssetIds: [],
      ledgerEntryId: null,
      error: null,
      keyId: principal.keyId,
      plan: principal.plan,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
    };
    // Reserve first (402 leaves nothing behind), then the job, then the operation.
    await this.spend.reserve(accountId, period, `${job._id}:1`, price, config.monthlySpendCapMicros);
    await this.m.Job.updateOne({ _id: job._id }, { $setOnInsert: job }, { upsert: true });
    await this.enqueue(job);
    return job;
  }

  private async enqueue(job: AiJobDoc): Promise<void> {
    await this.engine.enqueue({
      id: `${job._id}:${job.attempt}`,
      accountId: job.accountId,
      // Assets are account-scoped (spec 5.2): the account stands where a project would.
      projectId: job.accountId,
      resourceType: 'asset_ai_job',
      resourceId: job._id,
      operationType: AI_OPERATION_TYPE,
      input: { jobId: job._id, attempt: job.attempt },
      initiator: { keyId: job.keyId },
    });
  }

  /** A job as its owner sees it; an operation the engine gave up on shows as failed. */
  async get(p: Principal | null, id: string): Promise<AiJobDoc> {
    const { accountId } = this.assets.reader(p);
    const job = await this.m.Job.findOne({ _id: id, accountId }).lean<AiJobDoc>().exec();
    if (!job) throw aiJobNotFound();
    if (job.status === 'queued' || job.status === 'running') {
      const op = await this.engine.get(`${job._id}:${job.attempt}`);
      if (op?.status === 'failed')
        return { ...job, status: 'failed', error: { code: 'assets.ai_job_failed', message: 'the job failed' } };
    }
    return job;
  }

  /** Puts a failed job back in the queue as its next attempt (a new reservation, a new ledger key). */
  async retry(p: Principal | null, id: string, action: AiAction): Promise<AiJobDoc> {
    this.assets.writer(p, SCOPES.process);
    const job = await this.get(p, id);
    if (job.action !== action) throw aiJobNotFound();
    if (job.status !== 'failed')
      throw conflict('assets.job_not_retryable', `the job is ${job.status}; only a failed job is retried`, {
        status: job.status,
      });
    const config = await this.configs.of(job.accountId);
    const period = periodOf(new Date());
    const attempt = job.attempt + 1;
    await this.spend.reserve(job.accountId, period, `${job._id}:${attempt}`, job.priceMicros, config.monthlySpendCapMicros);
    const now = new Date();
    const next = await this.m.Job.findOneAndUpdate(
      { _id: job._id, attempt: job.attempt },
      { $set: { status: 'queued', attempt, period, error: null, result: null, updatedAt: now, finishedAt: null } },
      { new: true },
    )
      .lean<AiJobDoc>()
      .exec();
    if (!next) {
      await this.spend.release(job.accountId, period, `${job._id}:${attempt}`, job.priceMicros);
      throw conflict('assets.job_not_retryable', 'the job changed meanwhile');
    }
    await this.enqueue(next);
    return next;
  }

  // ---- the executor ---------------------------------------------------------------------------

  async run(ctx: OperationContext): Promise<{ status: string }> {
    const { jobId, attempt } = ctx.op.input as { jobId: string; attempt: number };
    const job = await this.m.Job.findById(jobId).lean<AiJobDoc>().exec();
    if (!job || job.attempt !== attempt || job.status === 'succeeded' || job.status === 'failed') return { status: 'skipped' };
    await this.m.Job.updateOne({ _id: jobId, attempt, status: 'queued' }, { $set: { status: 'running', updatedAt: new Date() } });
    let computed: Computed;
    try {
      computed = await ctx.step('compute', () => this.compute(job), { timeoutMs: 120_000 });
    } catch (e) {
      if (isPlatformError(e) && e.status < 500) return this.fail(job, e);
      throw e;
    }
    const debit = await ctx.step('debit', async () => {
      try {
        const r = await this.ports.get('credits').recordUsage({
          accountId: job.accountId,
          product: 'assets',
          credits: creditsOf(job.priceMicros),
          description: `Assets AI ${job.action}${job.assetId ? ` of ${job.assetId}` : ''}`,
          source: `assets.ai.${job.action}`,
          idempotencyKey: `assets.ai:${job._id}:${attempt}`,
        });
        return { entryId: r.entryId, error: null };
      } catch (e) {
        if (isPlatformError(e) && e.status < 500) return { entryId: null, error: { code: e.code, message: e.message } };
        throw e;
      }
    });
    if (debit.error) return this.fail(job, new PlatformError(debit.error.code, 402, debit.error.message));
    const outputIds = await ctx.step('outputs', () => this.publishOutputs(job, computed.outputs));
    await ctx.step('finish', () => this.finish(job, computed.result, outputIds, debit.entryId));
    return { status: 'succeeded' };
  }

  private async source(job: AiJobDoc): Promise<{ asset: AssetDoc; bytes: Buffer; region: string }> {
    const asset = await this.assets.m.Asset.findOne({ _id: job.assetId, accountId: job.accountId }, { outbox: 0 })
      .lean<AssetDoc>()
      .exec();
    if (!asset) throw notFound('assets.asset_not_found', 'asset not found');
    if (asset.status !== 'ready') throw notProcessable(asset.status);
    const version = asset.versions.find((v) => v.number === asset.currentVersion);
    const region = version ? await this.assets.locate(asset, version.sha256) : null;
    if (!version || !region) throw conflict('assets.source_unavailable', 'no copy of the asset bytes is available');
    const chunks: Buffer[] = [];
    for await (const c of this.assets.blobs.read(region, version.sha256)) chunks.push(c as Buffer);
    return { asset, bytes: Buffer.concat(chunks), region };
  }

  private async store(bytes: Buffer, region: string): Promise<string> {
    const staged = await this.assets.blobs.stage(Readable.from([bytes]));
    await this.assets.blobs.commit(staged, region);
    return staged.sha256;
  }

  private async compute(job: AiJobDoc): Promise<Computed> {
    const undecodable = (e: unknown): never => {
      if (isPlatformError(e)) throw e;
      throw new PlatformError('assets.undecodable_image', 422, `the image could not be decoded: ${(e as Error).message}`);
    };
    if (job.action === 'generation') {
      const provider = await gatedProvider(job.model);
      if (!provider) throw conflict('assets.ai_model_not_evaluated', `the model ${job.model} has not passed the evaluation gate`);
      const { prompt, width, height, count, bucket } = job.input as {
        prompt: string;
        width: number;
        height: number;
        count: number;
        bucket: string | null;
      };
      const b = bucket
        ? await this.assets.buckets.get(job.accountId, bucket)
        : await this.assets.buckets.ensureDefault(job.accountId);
      const images: Record<string, unknown>[] = [];
      const outputs: Output[] = [];
      for (let i = 0; i < count; i++) {
        const g = await provider.generate(prompt, width, height, i);
        images.push(g.result);
        const name = `generated-${i + 1}.png`;
        outputs.push({
          sha256: await this.store(g.output, b.homeRegion),
          region: b.homeRegion,
          bucketId: b._id,
          key: `ai/${job._id}/${name}`,
          name,
        });
      }
      return { result: { provider: provider.name, images }, outputs };
    }
    const { asset, bytes, region } = await this.source(job);
    if (job.action === 'text-extraction') {
      const r = await this.ocr.recognize(bytes).catch(undecodable);
      return { result: { engine: OCR_ENGINE, language: OCR_LANGUAGE, ...r }, outputs: [] };
    }
    const provider = await gatedProvider(job.model);
    if (!provider) throw conflict('assets.ai_model_not_evaluated', `the model ${job.model} has not passed the evaluation gate`);
    const output = async (buf: Buffer, name: string): Promise<Output> => ({
      sha256: await this.store(buf, region),
      region,
      bucketId: asset.bucketId,
      key: `ai/${job._id}/${name}`,
      name,
    });
    switch (job.action) {
      case 'analyze':
        return { result: await provider.analyze(bytes).catch(undecodable), outputs: [] };
      case 'moderation':
        return { result: await provider.moderate(bytes).catch(undecodable), outputs: [] };
      case 'smart-crop': {
        const { width, height } = job.input as { width: number; height: number };
        const r = await provider.smartCrop(bytes, width, height).catch(undecodable);
        return { result: r.result, outputs: [await output(r.output, 'smart-crop.png')] };
      }
      case 'background-remove': {
        const r = await provider.removeBackground(bytes).catch(undecodable);
        return { result: r.result, outputs: [await output(r.output, 'background-removed.png')] };
      }
      default:
        throw new PlatformError('assets.ai_action_unknown', 422, `no executor for ${job.action}`);
    }
  }

  /** Output bytes become private assets of the job's owner (keys fixed by the job: idempotent). */
  private async publishOutputs(job: AiJobDoc, outputs: Output[]): Promise<string[]> {
    const p = {
      accountId: job.accountId,
      accountSlug: '',
      plan: job.plan,
      keyId: job.keyId,
      role: 'owner',
      scopes: [],
    } as unknown as Principal;
    const ids: string[] = [];
    for (const o of outputs) {
      const existing = await this.assets.m.Asset.findOne(
        { accountId: job.accountId, bucketId: o.bucketId, key: o.key },
        { _id: 1 },
      )
        .lean<{ _id: string }>()
        .exec();
      if (existing) {
        ids.push(existing._id);
        continue;
      }
      const staged = await this.assets.uploads.stage(job.accountId, this.assets.blobs.read(o.region, o.sha256));
      try {
        const a = await this.assets.uploads.create(p, staged, o.name, {
          bucket: o.bucketId,
          key: o.key,
          visibility: 'private',
          tags: JSON.stringify(['ai-output', `ai-${job.action}`, 'local-provider']),
          metadata: JSON.stringify({
            ai_job_id: job._id,
            ai_action: job.action,
            provider: 'local',
            source_asset_id: job.assetId,
          }),
        });
        ids.push(a._id);
      } catch (e) {
        if (!(isPlatformError(e) && e.code === 'assets.duplicate_key')) throw e;
        const again = await this.assets.m.Asset.findOne(
          { accountId: job.accountId, bucketId: o.bucketId, key: o.key },
          { _id: 1 },
        )
          .lean<{ _id: string }>()
          .exec();
        if (again) ids.push(again._id);
      } finally {
        await this.assets.blobs.discard(staged);
      }
    }
    return ids;
  }

  private async finish(job: AiJobDoc, result: Record<string, unknown>, outputAssetIds: string[], ledgerEntryId: string | null) {
    const now = new Date();
    await this.m.Job.updateOne(
      { _id: job._id, attempt: job.attempt, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'succeeded', result, outputAssetIds, ledgerEntryId, updatedAt: now, finishedAt: now } },
    );
    // The charge counts once per attempt, however often this step runs again.
    const mark = await this.m.Job.updateOne(
      { _id: job._id, attempt: job.attempt, status: 'succeeded', countedAttempt: { $ne: job.attempt } },
      { $set: { countedAttempt: job.attempt } },
    );
    if (mark.modifiedCount === 1) await this.onCharged?.({ accountId: job.accountId, priceMicros: job.priceMicros, at: now });
    if (!job.assetId) return true;
    await this.m.Data.updateOne(
      { _id: job.assetId },
      {
        $set: {
          accountId: job.accountId,
          [`results.${job.action}`]: { jobId: job._id, at: now, result, outputAssetIds },
          updatedAt: now,
        },
      },
      { upsert: true },
    );
    if (job.action === 'moderation') {
      // The verdict is the asset's moderation_status (spec 2.3): a field change, so a new revision.
      await this.assets.m.Asset.updateOne(
        { _id: job.assetId, accountId: job.accountId },
        { $set: { moderationStatus: String(result.verdict), updatedAt: now }, $inc: { revision: 1 } },
      );
    }
    return true;
  }

  private async fail(job: AiJobDoc, e: PlatformError): Promise<{ status: string }> {
    const now = new Date();
    await this.m.Job.updateOne(
      { _id: job._id, attempt: job.attempt, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'failed', error: { code: e.code, message: e.message }, updatedAt: now, finishedAt: now } },
    );
    await this.spend.release(job.accountId, job.period, `${job._id}:${job.attempt}`, job.priceMicros);
    return { status: 'failed' };
  }

  /** `GET /{id}/ai`: the latest result of each action (one point read). */
  async data(p: Principal | null, assetId: string): Promise<{ asset: AssetDoc; data: AiDataDoc | null }> {
    const asset = await this.assets.get(p, assetId);
    const data = await this.m.Data.findById(assetId).lean<AiDataDoc>().exec();
    return { asset, data: data && data.accountId === asset.accountId ? data : null };
  }
}
