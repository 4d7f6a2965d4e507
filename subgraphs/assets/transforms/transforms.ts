import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { Readable } from 'node:stream';
import { type Model, Schema } from 'mongoose';
import sharp from 'sharp';
import { badRequest, conflict, notFound } from '../../../core/errors';
import { isDuplicateKey, model } from '../../../core/mongo';
import type { Principal } from '../../../core/principal';
import { TransformLimiter } from './limiter';
import type { AssetDoc, AssetVersion } from '../records';
import type { AssetAccess } from '../uploads';

/**
 * Image transformations (decisions 0023, 0024): named definitions, derivatives computed with sharp
 * (libvips) and cached by a hash of the source version's bytes and the canonical spec, stored in
 * the Assets blob store like any other bytes.
 */

export const FITS = ['cover', 'contain', 'fill', 'inside', 'outside'] as const;
export const GRAVITIES = [
  'center',
  'north',
  'northeast',
  'east',
  'southeast',
  'south',
  'southwest',
  'west',
  'northwest',
  'entropy',
  'attention',
] as const;
export const FORMATS = ['jpeg', 'png', 'webp', 'avif'] as const;
/** Largest output edge: a derivative is a delivery size, not a way to inflate a source. */
export const MAX_EDGE = 8192;
export const QUALITY_DEFAULT = 80;
const CACHE_MS = 1000;
const CACHE_MAX = 10_000;
export const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const MIME: Record<Format, string> = { jpeg: 'image/jpeg', png: 'image/png', webp: 'image/webp', avif: 'image/avif' };

export type Fit = (typeof FITS)[number];
export type Gravity = (typeof GRAVITIES)[number];
export type Format = (typeof FORMATS)[number];

export interface ResizeOp {
  type: 'resize';
  width: number | null;
  height: number | null;
  fit: Fit;
  gravity: Gravity;
}
/** The canonical spec: every field present, so equal specs hash equal. */
export interface TransformSpec {
  operations: ResizeOp[];
  format: Format | null;
  quality: number;
}

const oneOf = <T extends string>(list: readonly T[], v: unknown, field: string, dflt: T): T => {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'string' || !list.includes(v as T))
    throw badRequest('validation_failed', `${field} must be one of ${list.join(', ')}`);
  return v as T;
};
const edge = (v: unknown, field: string): number | null => {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_EDGE)
    throw badRequest('validation_failed', `${field} must be 1 to ${MAX_EDGE}`);
  return v;
};

/** Validates and completes a spec given in the typed (v2) shape. */
export function canonicalSpec(input: {
  operations?: { type?: string; width?: unknown; height?: unknown; fit?: unknown; gravity?: unknown }[];
  format?: unknown;
  quality?: unknown;
}): TransformSpec {
  const ops = input.operations ?? [];
  if (ops.length > 4) throw badRequest('validation_failed', 'at most 4 operations');
  const operations = ops.map((o, i): ResizeOp => {
    if (o.type !== 'resize') throw badRequest('validation_failed', `operations[${i}].type must be resize`);
    const width = edge(o.width, `operations[${i}].width`);
    const height = edge(o.height, `operations[${i}].height`);
    if (width === null && height === null) throw badRequest('validation_failed', `operations[${i}] needs width or height`);
    return {
      type: 'resize',
      width,
      height,
      fit: oneOf(FITS, o.fit, 'fit', 'cover'),
      gravity: oneOf(GRAVITIES, o.gravity, 'gravity', 'center'),
    };
  });
  const quality = input.quality ?? QUALITY_DEFAULT;
  if (typeof quality !== 'number' || !Number.isInteger(quality) || quality < 1 || quality > 100) {
    throw badRequest('validation_failed', 'quality must be 1 to 100');
  }
  const format = input.format === undefined || input.format === null ? null : oneOf(FORMATS, input.format, 'format', 'webp');
  if (operations.length === 0 && format === null)
    throw badRequest('validation_failed', 'a transformation needs an operation or a format');
  return { operations, format, quality };
}

/**
 * The compact spec of a `/tr/{spec}/` address: `w_800,h_600,c_cover,g_center,f_webp,q_80` (one
 * resize; keys in that order). Parsing is strict and returns null on anything else, so an
 * unknown address does no work.
 */
export function encodeSpec(s: TransformSpec): string {
  const parts: string[] = [];
  const op = s.operations[0];
  if (s.operations.length > 1) throw badRequest('validation_failed', 'a signed transform address holds one resize');
  if (op) {
    if (op.width !== null) parts.push(`w_${op.width}`);
    if (op.height !== null) parts.push(`h_${op.height}`);
    parts.push(`c_${op.fit}`, `g_${op.gravity}`);
  }
  if (s.format) parts.push(`f_${s.format}`);
  parts.push(`q_${s.quality}`);
  return parts.join(',');
}

export function decodeSpec(text: string): TransformSpec | null {
  const m = /^(?:w_(\d{1,4}),)?(?:h_(\d{1,4}),)?(?:c_([a-z]+),g_([a-z]+),)?(?:f_([a-z]+),)?q_(\d{1,3})$/.exec(text);
  if (!m) return null;
  const [, w, h, c, g, f, q] = m;
  if ((w || h) && !c) return null;
  try {
    const spec = canonicalSpec({
      operations: c ? [{ type: 'resize', width: w ? Number(w) : null, height: h ? Number(h) : null, fit: c, gravity: g }] : [],
      format: f ?? null,
      quality: Number(q),
    });
    return encodeSpec(spec) === text ? spec : null;
  } catch {
    return null;
  }
}

/** The cache key of a derivative: the source bytes' hash and the canonical spec. */
export function derivativeKey(sourceSha256: string, spec: TransformSpec): string {
  return createHash('sha256')
    .update(`${sourceSha256}\n${encodeSpec(spec)}`)
    .digest('hex');
}

// ---- models ---------------------------------------------------------------------------------

export interface TransformationDoc {
  _id: string;
  accountId: string;
  name: string;
  /** 1: the legacy flat form; 2: typed operations. */
  version: number;
  spec: TransformSpec;
  eager: boolean;
  createdAt: Date;
}
const transformationSchema = new Schema<TransformationDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    name: { type: String, required: true },
    version: Number,
    spec: { type: Schema.Types.Mixed, required: true },
    eager: Boolean,
    createdAt: Date,
  },
  { collection: 'asset_transformations', versionKey: false, minimize: false },
);
transformationSchema.index({ accountId: 1, name: 1 }, { unique: true, name: 'transformation_name' });

export interface DerivativeDoc {
  /** `derivativeKey(source, spec)`: one derivative per source bytes and spec. */
  _id: string;
  accountId: string;
  assetId: string;
  version: number;
  spec: string;
  sha256: string;
  size: number;
  width: number;
  height: number;
  format: Format;
  mimeType: string;
  region: string;
  createdAt: Date;
}
const derivativeSchema = new Schema<DerivativeDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    assetId: String,
    version: Number,
    spec: String,
    sha256: String,
    size: Number,
    width: Number,
    height: Number,
    format: String,
    mimeType: String,
    region: String,
    createdAt: Date,
  },
  { collection: 'asset_derivatives', versionKey: false },
);
derivativeSchema.index({ assetId: 1, createdAt: -1 });

/** One eager-materialisation job per asset version (its id), run by the assets worker. */
export interface EagerJobDoc {
  _id: string;
  accountId: string;
  assetId: string;
  version: number;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  attempts: number;
  error: string | null;
  leaseUntil: Date | null;
  createdAt: Date;
  updatedAt: Date;
}
const eagerJobSchema = new Schema<EagerJobDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    assetId: String,
    version: Number,
    status: String,
    attempts: Number,
    error: { type: String, default: null },
    leaseUntil: { type: Date, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_transform_jobs', versionKey: false },
);
eagerJobSchema.index({ status: 1, createdAt: 1 });
const EAGER_ATTEMPTS = 3;
const EAGER_LEASE_MS = 60_000;

// ---- the service ----------------------------------------------------------------------------

export interface Source {
  asset: AssetDoc;
  version: AssetVersion;
  region: string;
}

export class Transforms {
  readonly Transformation: Model<TransformationDoc>;
  readonly Derivative: Model<DerivativeDoc>;
  /** Single flight: the computation in progress for a derivative key, shared by every caller. */
  private readonly inflight = new Map<string, Promise<DerivativeDoc>>();
  /** Computations actually run (for tests and the bench). */
  computations = 0;
  /**
   * Derivatives this process has served, kept ~1 s like the delivery decision: a derivative's
   * bytes never change under its key, so a hot address skips the record and the blob check.
   */
  private readonly served = new Map<string, { doc: DerivativeDoc; until: number }>();
  private readonly defs = new Map<string, { doc: TransformationDoc | null; until: number }>();

  constructor(
    private readonly assets: AssetAccess,
    /** Told of each derivative computed (the usage counters, views/usage.ts). */
    private readonly onComputed: (d: DerivativeDoc) => void = () => undefined,
  ) {
    const conn = assets.m.Asset.db;
    this.Transformation = model(conn, 'assets', 'Transformation', transformationSchema);
    this.Derivative = model(conn, 'assets', 'Derivative', derivativeSchema);
    this.EagerJob = model(conn, 'assets', 'TransformJob', eagerJobSchema);
    const cfg = assets.settings;
    this.limiter = new TransformLimiter(cfg.ASSETS_TRANSFORM_CONCURRENCY ?? 4, cfg.ASSETS_TRANSFORM_ACCOUNT_CONCURRENCY ?? 2);
  }
  readonly limiter: TransformLimiter;
  readonly EagerJob: Model<EagerJobDoc>;

  // -- definitions --

  async define(
    p: Principal | null,
    name: string,
    version: number,
    spec: TransformSpec,
    eager: boolean,
  ): Promise<TransformationDoc> {
    const { accountId } = this.assets.writer(p);
    if (!NAME.test(name))
      throw badRequest('validation_failed', 'name must be 1–64 of a-z 0-9 _ - (starting with a letter or digit)');
    const doc: TransformationDoc = { _id: `${accountId}:${name}`, accountId, name, version, spec, eager, createdAt: new Date() };
    try {
      await this.Transformation.create(doc);
      this.defs.delete(doc._id);
    } catch (e) {
      if (isDuplicateKey(e)) throw conflict('assets.transformation_exists', `transformation ${name} exists`);
      throw e;
    }
    return doc;
  }

  async list(p: Principal | null): Promise<TransformationDoc[]> {
    const { accountId } = this.assets.reader(p);
    return this.Transformation.find({ accountId }).sort({ name: 1 }).lean<TransformationDoc[]>().exec();
  }

  /** A definition by name (cached ~1 s for delivery; edits in this process drop the entry). */
  async named(accountId: string, name: string): Promise<TransformationDoc | null> {
    if (!NAME.test(name)) return null;
    const k = `${accountId}:${name}`;
    const hit = this.defs.get(k);
    if (hit && hit.until > Date.now()) return hit.doc;
    const doc = await this.Transformation.findOne({ accountId, name }).lean<TransformationDoc>().exec();
    if (this.defs.size >= CACHE_MAX) this.defs.clear();
    this.defs.set(k, { doc, until: Date.now() + CACHE_MS });
    return doc;
  }

  async remove(p: Principal | null, name: string): Promise<void> {
    const { accountId } = this.assets.writer(p);
    this.defs.delete(`${accountId}:${name}`);
    const res = await this.Transformation.deleteOne({ accountId, name });
    if (res.deletedCount !== 1) throw notFound('assets.transformation_not_found', 'transformation not found');
  }

  async resolve(p: Principal | null, name: string): Promise<TransformationDoc> {
    const { accountId } = this.assets.reader(p);
    const t = await this.named(accountId, name);
    if (!t) throw notFound('assets.transformation_not_found', 'transformation not found');
    return t;
  }

  // -- derivatives --

  /** The asset's current version, when it may have derivatives: ready images only. */
  async source(asset: AssetDoc): Promise<Source | null> {
    if (asset.status !== 'ready' || asset.type !== 'image') return null;
    const version = asset.versions.find((v) => v.number === asset.currentVersion);
    if (!version) return null;
    const region = await this.assets.locate(asset, version.sha256);
    return region ? { asset, version, region } : null;
  }

  /**
   * The derivative of `src` under `spec`: the stored one, or computed once. Concurrent callers of
   * one key in this process share one computation; across processes the derivative's id is its
   * key, so a second writer's insert is a duplicate and both serve equal bytes.
   */
  async materialise(src: Source, spec: TransformSpec): Promise<DerivativeDoc> {
    const key = derivativeKey(src.version.sha256, spec);
    const hit = this.served.get(key);
    if (hit && hit.until > Date.now()) return hit.doc;
    const running = this.inflight.get(key);
    if (running) return running;
    const work = (async () => {
      const have = await this.Derivative.findById(key).lean<DerivativeDoc>().exec();
      if (have && (await this.assets.blobs.stat(have.region, have.sha256)) !== null) return have;
      // Bounded per process and per account (each decodes a whole image): transform-limiter.ts.
      return this.limiter.run(src.asset.accountId, () => this.compute(key, src, spec));
    })();
    this.inflight.set(key, work);
    try {
      const doc = await work;
      if (this.served.size >= CACHE_MAX) this.served.clear();
      this.served.set(key, { doc, until: Date.now() + CACHE_MS });
      return doc;
    } finally {
      this.inflight.delete(key);
    }
  }

  private async compute(key: string, src: Source, spec: TransformSpec): Promise<DerivativeDoc> {
    this.computations++;
    const chunks: Buffer[] = [];
    for await (const c of this.assets.blobs.read(src.region, src.version.sha256)) chunks.push(c as Buffer);
    // `rotate()` applies EXIF orientation; sharp writes no metadata unless asked (strips EXIF/GPS).
    const input = Buffer.concat(chunks);
    let img = sharp(input, { limitInputPixels: 100_000_000 }).rotate();
    for (const op of spec.operations) {
      img = img.resize({
        width: op.width ?? undefined,
        height: op.height ?? undefined,
        fit: op.fit,
        position: op.gravity === 'entropy' || op.gravity === 'attention' ? sharp.strategy[op.gravity] : op.gravity,
        withoutEnlargement: true,
      });
    }
    const meta = await sharp(input).metadata();
    const format: Format = spec.format ?? (FORMATS.includes(meta.format as Format) ? (meta.format as Format) : 'jpeg');
    img = img.toFormat(format, { quality: spec.quality, ...(format === 'avif' ? { effort: 2 } : {}) });
    const { data, info } = await img.toBuffer({ resolveWithObject: true });
    const staged = await this.assets.blobs.stage(Readable.from([data]));
    await this.assets.blobs.commit(staged, src.region);
    const doc: DerivativeDoc = {
      _id: key,
      accountId: src.asset.accountId,
      assetId: src.asset._id,
      version: src.version.number,
      spec: encodeSpec(spec),
      sha256: staged.sha256,
      size: staged.size,
      width: info.width,
      height: info.height,
      format,
      mimeType: MIME[format],
      region: src.region,
      createdAt: new Date(),
    };
    await this.Derivative.replaceOne({ _id: key }, doc, { upsert: true });
    this.onComputed(doc);
    return doc;
  }

  async derivatives(p: Principal | null, assetId: string): Promise<DerivativeDoc[]> {
    const asset = await this.assets.get(p, assetId);
    if (asset.status !== 'ready') return [];
    return this.Derivative.find({ assetId: asset._id, accountId: asset.accountId })
      .sort({ createdAt: -1 })
      .lean<DerivativeDoc[]>()
      .exec();
  }

  /** `POST /{id}/transforms`: materialises a named definition (or an inline spec) now. */
  async transform(
    p: Principal | null,
    assetId: string,
    name: string | null,
    inline: TransformSpec | null,
  ): Promise<DerivativeDoc> {
    this.assets.writer(p);
    const asset = await this.assets.get(p, assetId);
    const spec = name ? (await this.resolve(p, name)).spec : inline;
    if (!spec) throw badRequest('validation_failed', 'transformation or definition is required');
    const src = await this.source(asset);
    if (!src) throw conflict('assets.not_transformable', 'only ready images have derivatives');
    return this.materialise(src, spec);
  }

  // -- eager definitions: a job per stored image version --

  /** Queues the eager job of a newly stored version (only for ready images of accounts with eager definitions). */
  async enqueueEager(asset: AssetDoc): Promise<void> {
    if (asset.status !== 'ready' || asset.type !== 'image') return;
    const any = await this.Transformation.findOne({ accountId: asset.accountId, eager: true }, { _id: 1 }).lean().exec();
    if (!any) return;
    const now = new Date();
    try {
      await this.EagerJob.create({
        _id: `${asset._id}:${asset.currentVersion}`,
        accountId: asset.accountId,
        assetId: asset._id,
        version: asset.currentVersion,
        status: 'queued',
        attempts: 0,
        error: null,
        leaseUntil: null,
        createdAt: now,
        updatedAt: now,
      });
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
  }

  /** Claims and runs one due eager job; true when there was one. */
  async runEagerOnce(): Promise<boolean> {
    const now = new Date();
    const candidates = await this.EagerJob.find(
      { $or: [{ status: 'queued' }, { status: 'running', leaseUntil: { $lt: now } }] },
      { _id: 1, status: 1, leaseUntil: 1 },
    )
      .sort({ createdAt: 1 })
      .limit(5)
      .lean<EagerJobDoc[]>()
      .exec();
    for (const c of candidates) {
      const job = await this.EagerJob.findOneAndUpdate(
        { _id: c._id, status: c.status, leaseUntil: c.leaseUntil },
        {
          $set: { status: 'running', leaseUntil: new Date(now.getTime() + EAGER_LEASE_MS), updatedAt: now },
          $inc: { attempts: 1 },
        },
        { new: true },
      )
        .lean<EagerJobDoc>()
        .exec();
      if (!job) continue;
      try {
        const asset = await this.assets.anyAsset(job.assetId);
        const src = asset && asset.currentVersion === job.version ? await this.source(asset) : null;
        if (src) {
          const defs = await this.Transformation.find({ accountId: job.accountId, eager: true })
            .lean<TransformationDoc[]>()
            .exec();
          for (const d of defs) await this.materialise(src, d.spec);
        }
        await this.EagerJob.updateOne(
          { _id: job._id },
          { $set: { status: 'succeeded', leaseUntil: null, updatedAt: new Date() } },
        );
      } catch (e) {
        const failed = job.attempts >= EAGER_ATTEMPTS;
        await this.EagerJob.updateOne(
          { _id: job._id },
          {
            $set: { status: failed ? 'failed' : 'queued', error: (e as Error).message, leaseUntil: null, updatedAt: new Date() },
          },
        );
      }
      return true;
    }
    return false;
  }

  // -- signed transform addresses --

  private mac(pathname: string, exp: number): Buffer {
    return createHmac('sha256', this.assets.cfg.INTERNAL_SIGNING_KEY).update(`assets-tr:${pathname}:${exp}`).digest();
  }

  signPath(pathname: string, exp: number): string {
    return this.mac(pathname, exp).toString('base64url');
  }

  /** True when `sig` is this path's and expiry's signature and `exp` is in the future. */
  verify(pathname: string, exp: string | undefined, sig: string | undefined): boolean {
    if (!exp || !sig || !/^\d{1,12}$/.test(exp)) return false;
    const e = Number(exp);
    if (e * 1000 <= Date.now()) return false;
    const want = this.mac(pathname, e);
    const got = Buffer.from(sig, 'base64url');
    return got.length === want.length && timingSafeEqual(got, want);
  }

  async signedTransformUrl(
    p: Principal | null,
    assetId: string,
    name: string,
    expiresIn: number,
  ): Promise<{ url: string; expiresAt: Date }> {
    const asset = await this.assets.get(p, assetId);
    if (asset.status === 'deleting') throw notFound('assets.not_found', 'asset not found');
    const t = await this.resolve(p, name);
    const exp = Math.floor(Date.now() / 1000) + expiresIn;
    const ext = t.spec.format ?? asset.originalName.split('.').pop() ?? 'img';
    const base = asset.originalName.replace(/\.[^.]*$/, '') || 'image';
    const file = encodeURIComponent(`${base}.${ext}`);
    const pathname = `/assets/${assetId}/tr/${encodeSpec(t.spec)}/${file}`;
    return {
      url: `${this.assets.cfg.cdnUrl}${pathname}?exp=${exp}&sig=${this.signPath(pathname, exp)}`,
      expiresAt: new Date(exp * 1000),
    };
  }
}
