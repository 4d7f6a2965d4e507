import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Connection, type Model, Schema } from 'mongoose';
import sharp from 'sharp';
import { model } from '../../../core/mongo';
import { isDuplicateKey } from '../../../core/mongo';
import type { OperationContext, OperationEngine } from '../../../core/operations/engine';
import { ffmpeg } from './ffmpeg';
import type { AssetDoc, AssetVersion } from '../records';
import type { AssetsService } from '../storage';

/** Operation type on the kernel engine: renders one video output. */
export const VIDEO_OUTPUT_OPERATION = 'assets.video_output';

/**
 * Legacy video output kinds (spec 4.3). `hls` is a VOD playlist at the output's address plus its
 * MPEG-TS segments one level below it (`…/video/hls/{profile}/{n}.ts`, cdn.ts).
 */
export const VIDEO_KINDS = ['poster', 'thumbnail', 'mp4', 'hls'] as const;
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
const MIME: Record<VideoKind, string> = {
  poster: 'image/jpeg',
  thumbnail: 'image/jpeg',
  mp4: 'video/mp4',
  hls: 'application/vnd.apple.mpegurl',
};
const EXT: Record<VideoKind, string> = { poster: 'jpg', thumbnail: 'jpg', mp4: 'mp4', hls: 'm3u8' };
/** Target length of an HLS segment, in seconds (players buffer about three). */
export const HLS_SEGMENT_SECONDS = 4;
export const HLS_SEGMENT_MIME = 'video/mp2t';

/** One stored HLS segment: its blob and its duration as the playlist states it. */
export interface HlsSegment {
  sha256: string;
  size: number;
  duration: number;
}

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
  /** `hls` only: the segments, in order (the playlist is written from them when served). */
  segments?: HlsSegment[];
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
    segments: { type: [{ _id: false, sha256: String, size: Number, duration: Number }], default: undefined },
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
  const video = [
    ...(height === null ? [] : ['-vf', scale(height)[0]]),
    ...['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-pix_fmt', 'yuv420p'],
    ...['-c:a', 'aac', '-b:a', '128k'],
  ];
  if (kind === 'hls')
    return [
      ...video,
      ...['-f', 'hls', '-hls_time', String(HLS_SEGMENT_SECONDS), '-hls_playlist_type', 'vod', '-hls_list_size', '0'],
      // A keyframe at every segment boundary, so each segment starts playable.
      ...['-force_key_frames', `expr:gte(t,n_forced*${HLS_SEGMENT_SECONDS})`],
    ];
  return [...video, '-movflags', '+faststart', '-f', 'mp4'];
}

/** The segment file names and durations of an ffmpeg VOD playlist, in order. */
export function parsePlaylist(m3u8: string): Array<{ file: string; duration: number }> {
  const out: Array<{ file: string; duration: number }> = [];
  let duration: number | null = null;
  for (const line of m3u8.split(/\r?\n/)) {
    const inf = /^#EXTINF:([0-9.]+)/.exec(line);
    if (inf) duration = Number(inf[1]);
    else if (line && !line.startsWith('#') && duration !== null) {
      out.push({ file: line.trim(), duration });
      duration = null;
    }
  }
  return out;
}

/**
 * The playlist served for stored segments: segment `n` at `{profile}/{n}.ts` relative to the
 * playlist's own address (`…/video/hls/{profile}`), carrying `query` (a private video's token).
 */
export function playlistFor(profile: string, segments: HlsSegment[], query = ''): string {
  const target = Math.max(HLS_SEGMENT_SECONDS, ...segments.map((s) => Math.ceil(s.duration)));
  return [
    '#EXTM3U',
    '#EXT-X-VERSION:3',
    `#EXT-X-TARGETDURATION:${target}`,
    '#EXT-X-MEDIA-SEQUENCE:0',
    '#EXT-X-PLAYLIST-TYPE:VOD',
    ...segments.flatMap((s, n) => [`#EXTINF:${s.duration.toFixed(6)},`, `${encodeURIComponent(profile)}/${n}.ts${query}`]),
    '#EXT-X-ENDLIST',
    '',
  ].join('\n');
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

  /** The output of a source version, kind and profile if it was ever asked for (no job queued). */
  existing(sourceSha256: string, kind: VideoKind, profile: string): Promise<VideoOutputDoc | null> {
    return this.get(outputKey(sourceSha256, kind, profile));
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
    let result: { sha256: string; size: number; width: number | null; height: number | null; segments?: HlsSegment[] };
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
  ): Promise<{ sha256: string; size: number; width: number | null; height: number | null; segments?: HlsSegment[] }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'assets-video-'));
    try {
      const input = path.join(dir, 'source');
      const output = path.join(dir, `out.${EXT[kind]}`);
      await pipeline(this.assets.blobs.read(region, sha256), createWriteStream(input));
      const extra = kind === 'hls' ? ['-hls_segment_filename', path.join(dir, 'seg%d.ts')] : [];
      await ffmpeg(['-i', input, ...renderArgs(kind, VIDEO_PROFILES[profile] ?? null), ...extra, output], signal);
      if (kind === 'hls') {
        // Each segment is a blob of its own; the playlist is written from their list when served.
        const listed = parsePlaylist(await readFile(output, 'utf8'));
        const files = new Set(await readdir(dir));
        const segments: HlsSegment[] = [];
        for (const { file, duration } of listed) {
          if (!files.has(file)) throw new Error(`ffmpeg listed a segment it did not write: ${file}`);
          const seg = await this.assets.blobs.stage(createReadStream(path.join(dir, file)));
          await this.assets.blobs.commit(seg, region);
          segments.push({ sha256: seg.sha256, size: seg.size, duration });
        }
        if (segments.length === 0) throw new Error('ffmpeg wrote no HLS segment');
        const digest = createHash('sha256')
          .update(segments.map((s) => s.sha256).join(','))
          .digest('hex');
        return { sha256: digest, size: segments.reduce((a, s) => a + s.size, 0), width: null, height: null, segments };
      }
      let width: number | null = null;
      let height: number | null = null;
      if (kind === 'poster' || kind === 'thumbnail') {
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
