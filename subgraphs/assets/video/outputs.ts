import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Connection, type Model, Schema } from 'mongoose';
import sharp from 'sharp';
import { model } from '../../../core/mongo';
import { isDuplicateKey } from '../../../core/mongo';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import type { AssetDoc, AssetVersion } from '../model';
import type { AssetsService } from '../service';
import { ffmpeg } from './ffmpeg';

/** Operation type on the kernel engine: renders one video output. */
export const VIDEO_OUTPUT_OPERATION = 'assets.video_output';

/**
 * Legacy video output kinds (spec 4.3) that are built. `hls` (a playlist plus segments, which the
 * one-file address shape cannot carry alone) is not: its address answers 404.
 */
export const VIDEO_KINDS = ['poster', 'thumbnail', 'mp4'] as const;
export type VideoKind = (typeof VIDEO_KINDS)[number];

/** Profiles (spec "not shown"): the output's height, never enlarged; `original` keeps the source's. */
export const VIDEO_PROFILES: Record<string, number | null> = {
  original: null,
  '1080p': 1080,
  '720p': 720,
  '480p': 480,
  '360p': 360,
};
/** A thumbnail is at most this tall whatever the profile. */
const THUMBNAIL_MAX_HEIGHT = 180;
const MIME: Record<VideoKind, string> = { poster: 'image/jpeg', thumbnail: 'image/jpeg', mp4: 'video/mp4' };
const EXT: Record<VideoKind, string> = { poster: 'jpg', thumbnail: 'jpg', mp4: 'mp4' };

export interface VideoOutputDoc {
  /** Hash of the source bytes, kind and profile: one output per source version and spec. */
  _id: string;
  accountId: string;
  assetId: string;
  version: number;
  kind: VideoKind;
  profile: string;
  status: 'queued' | 'ready' | 'failed';
  sha256: string | null;
  size: number;
  width: number | null;
  height: number | null;
  mimeType: string;
  region: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const outputSchema = new Schema<VideoOutputDoc>(
  {
    _id: { type: String, required: true },
    accountId: String,
    assetId: String,
    version: Number,
    kind: String,
    profile: String,
    status: String,
    sha256: { type: String, default: null },
    size: { type: Number, default: 0 },
    width: { type: Number, default: null },
    height: { type: Number, default: null },
    mimeType: String,
    region: { type: String, default: null },
    error: { type: String, default: null },
    createdAt: Date,
    updatedAt: Date,
  },
  { collection: 'asset_video_outputs', versionKey: false },
);

export const videoOutputModel = (conn: Connection): Model<VideoOutputDoc> => model(conn, 'assets', 'VideoOutput', outputSchema);

export const outputKey = (sha256: string, kind: VideoKind, profile: string): string =>
  createHash('sha256').update(`${sha256}:${kind}:${profile}`).digest('hex');

/** ffmpeg arguments after the input for one kind and profile. */
function renderArgs(kind: VideoKind, height: number | null): string[] {
  // `-2`: the width that keeps the aspect ratio, rounded to even (H.264 needs even sizes).
  const scale = (h: number | null) => (h === null ? [] : [`scale=-2:'min(${h},ih)'`]);
  if (kind === 'poster')
    return ['-frames:v', '1', '-vf', ['select=eq(n\\,0)', ...scale(height)].join(','), '-q:v', '3', '-f', 'image2'];
  if (kind === 'thumbnail') {
    const h = Math.min(height ?? THUMBNAIL_MAX_HEIGHT, THUMBNAIL_MAX_HEIGHT);
    return ['-frames:v', '1', '-vf', ['thumbnail', ...scale(h)].join(','), '-q:v', '4', '-f', 'image2'];
  }
  return [
    ...(height === null ? [] : ['-vf', scale(height)[0]]),
    ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p'],
    ...['-c:a', 'aac', '-b:a', '128k', '-movflags', '+faststart', '-f', 'mp4'],
  ];
}

/**
 * Legacy video outputs (spec 4.3 `{cdn_url}/assets/{id}/video/{kind}/{profile}`): the first request
 * for an output records it and enqueues a durable operation that renders it with ffmpeg; the
 * output is stored in the blob store like a derivative and served from there afterwards.
 */
export class VideoOutputs {
  constructor(
    readonly Output: Model<VideoOutputDoc>,
    private readonly assets: AssetsService,
    private readonly engine: OperationEngine,
  ) {}

  /** The output of the asset's current version, asked for now if it does not exist yet. */
  async request(asset: AssetDoc, version: AssetVersion, kind: VideoKind, profile: string): Promise<VideoOutputDoc> {
    const id = outputKey(version.sha256, kind, profile);
    const have = await this.Output.findById(id).lean<VideoOutputDoc>().exec();
    if (have) return have;
    const now = new Date();
    const doc: VideoOutputDoc = {
      _id: id,
      accountId: asset.accountId,
      assetId: asset._id,
      version: version.number,
      kind,
      profile,
      status: 'queued',
      sha256: null,
      size: 0,
      width: null,
      height: null,
      mimeType: MIME[kind],
      region: null,
      error: null,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.Output.create(doc);
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
    }
    // Enqueue is idempotent on the id: concurrent first requests make one operation.
    await this.engine.enqueue({
      id: `video-${id}`,
      accountId: asset.accountId,
      projectId: asset.accountId,
      resourceType: 'asset_video_output',
      resourceId: id,
      operationType: VIDEO_OUTPUT_OPERATION,
      input: { outputId: id },
    });
    return (await this.Output.findById(id).lean<VideoOutputDoc>().exec()) ?? doc;
  }

  async get(id: string): Promise<VideoOutputDoc | null> {
    return this.Output.findById(id).lean<VideoOutputDoc>().exec();
  }

  /** The operation: renders the output once (a completed render step is not run again). */
  async run(ctx: OperationContext): Promise<{ status: string }> {
    const { outputId } = ctx.op.input as { outputId: string };
    const out = await this.get(outputId);
    if (!out || out.status !== 'queued') return { status: out?.status ?? 'gone' };
    const asset = await this.assets.anyAsset(out.assetId);
    const version = asset?.versions.find((v) => v.number === out.version);
    const region = asset && version ? await this.assets.locate(asset, version.sha256) : null;
    if (!asset || !version || !region) return this.fail(outputId, 'the source version is no longer available');
    let result: { sha256: string; size: number; width: number | null; height: number | null };
    try {
      result = await ctx.step('render', (s) => this.render(region, version.sha256, out.kind, out.profile, s.signal), {
        timeoutMs: 10 * 60_000,
      });
    } catch (e) {
      // ffmpeg on the same bytes fails the same way again: record it rather than retry.
      return this.fail(outputId, (e as Error).message);
    }
    await this.Output.updateOne(
      { _id: outputId, status: 'queued' },
      { $set: { status: 'ready', ...result, region, updatedAt: new Date() } },
    );
    return { status: 'ready' };
  }

  private async fail(id: string, error: string): Promise<{ status: string }> {
    await this.Output.updateOne({ _id: id, status: 'queued' }, { $set: { status: 'failed', error, updatedAt: new Date() } });
    return { status: 'failed' };
  }

  private async render(
    region: string,
    sha256: string,
    kind: VideoKind,
    profile: string,
    signal: AbortSignal,
  ): Promise<{ sha256: string; size: number; width: number | null; height: number | null }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'assets-video-'));
    try {
      const input = path.join(dir, 'source');
      const output = path.join(dir, `out.${EXT[kind]}`);
      await pipeline(this.assets.blobs.read(region, sha256), createWriteStream(input));
      await ffmpeg(['-i', input, ...renderArgs(kind, VIDEO_PROFILES[profile] ?? null), output], signal);
      let width: number | null = null;
      let height: number | null = null;
      if (kind !== 'mp4') {
        const meta = await sharp(output).metadata();
        width = meta.width ?? null;
        height = meta.height ?? null;
      }
      const staged = await this.assets.blobs.stage(createReadStream(output));
      await this.assets.blobs.commit(staged, region);
      return { sha256: staged.sha256, size: staged.size, width, height };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
