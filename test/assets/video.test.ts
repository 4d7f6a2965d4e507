import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { ffmpeg } from '../../subgraphs/assets/video/ffmpeg';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Legacy video outputs rendered by ffmpeg as durable jobs, through the real bridge and CDN listener. */
describe('assets video outputs', () => {
  let t: TestPlatform;
  let dir: string;
  let cdnUrl: string;
  let clip: Buffer;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'assets-video-test-'));
    // A 1-second 320×240 test clip, made by the same ffmpeg.
    const file = path.join(dir, 'clip.mp4');
    await ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'testsrc=duration=1:size=320x240:rate=10',
      '-c:v',
      'libx264',
      '-pix_fmt',
      'yuv420p',
      file,
    ]);
    clip = await readFile(file);
    t = await startTestPlatform({ ASSETS_BLOB_DIR: path.join(dir, 'blobs') });
    cdnUrl = t.platform.cdnUrl!;
  });
  afterAll(async () => {
    await t.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const upload = async (key: string, k: string, visibility: string) => {
    const fd = new FormData();
    fd.append('key', k);
    fd.append('visibility', visibility);
    fd.append('file', new Blob([clip]), 'clip.mp4');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as any).data;
  };
  /** GETs an output, following 202 (still rendering) until it is there. */
  const output = async (url: string) => {
    for (let i = 0; ; i++) {
      const res = await fetch(url);
      if (res.status !== 202 || i > 20)
        return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  it('renders a poster frame and a thumbnail with the right decoded dimensions, and an mp4', async () => {
    const { key } = await t.createKey();
    const v = await upload(key, 'clips/public.mp4', 'public');
    expect(v).toMatchObject({ type: 'video', status: 'ready' });

    const poster = await output(`${cdnUrl}/assets/${v.id}/video/poster/original`);
    expect(poster.status).toBe(200);
    expect(poster.type).toBe('image/jpeg');
    expect(await sharp(poster.body).metadata()).toMatchObject({ format: 'jpeg', width: 320, height: 240 });

    const thumb = await output(`${cdnUrl}/assets/${v.id}/video/thumbnail/original`);
    expect(thumb.status).toBe(200);
    expect(await sharp(thumb.body).metadata()).toMatchObject({ format: 'jpeg', width: 240, height: 180 });

    const mp4 = await output(`${cdnUrl}/assets/${v.id}/video/mp4/360p`);
    expect(mp4.status).toBe(200);
    expect(mp4.type).toBe('video/mp4');
    expect(mp4.body.subarray(4, 8).toString('latin1')).toBe('ftyp');

    // Served from the stored output afterwards (same bytes); unknown kinds, profiles and non-videos are 404.
    expect((await output(`${cdnUrl}/assets/${v.id}/video/poster/original`)).body.equals(poster.body)).toBe(true);
    expect((await fetch(`${cdnUrl}/assets/${v.id}/video/gif/original`)).status).toBe(404);
    expect((await fetch(`${cdnUrl}/assets/${v.id}/video/poster/4k`)).status).toBe(404);
    expect((await fetch(`${cdnUrl}/assets/00000000-0000-4000-8000-000000000000/video/poster/original`)).status).toBe(404);
  });

  it('a private video output needs the signed-delivery token', async () => {
    const { key } = await t.createKey();
    const v = await upload(key, 'clips/private.mp4', 'private');
    expect((await fetch(`${cdnUrl}/assets/${v.id}/video/poster/original`)).status).toBe(404);
    expect((await fetch(`${cdnUrl}/assets/${v.id}/video/poster/original?token=forged.token`)).status).toBe(404);
    const signed = await t.rest('POST', `/api/v1/assets/${v.id}/signed-url`, { key, body: { expires_in: 300 } });
    expect(signed.status).toBe(201);
    const token = new URL(signed.body.data.url).searchParams.get('token');
    expect(token).toBeTruthy();
    const poster = await output(`${cdnUrl}/assets/${v.id}/video/poster/360p?token=${encodeURIComponent(token!)}`);
    expect(poster.status).toBe(200);
    expect(await sharp(poster.body).metadata()).toMatchObject({ width: 320, height: 240 });
  });

  it('serves HLS: a VOD playlist whose segments resolve beside it, with a private video’s token carried along', async () => {
    const { key } = await t.createKey();
    const pub = await upload(key, 'clips/hls.mp4', 'public');
    const url = `${cdnUrl}/assets/${pub.id}/video/hls/360p`;
    const playlist = await output(url);
    expect(playlist.status).toBe(200);
    expect(playlist.type).toBe('application/vnd.apple.mpegurl');
    const text = playlist.body.toString('utf8');
    expect(text.startsWith('#EXTM3U\n')).toBe(true);
    expect(text).toContain('#EXT-X-PLAYLIST-TYPE:VOD');
    expect(text.trimEnd().endsWith('#EXT-X-ENDLIST')).toBe(true);
    const segments = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(segments[0]).toBe('360p/0.ts');
    // A player resolves each entry against the playlist's address.
    const seg = await fetch(new URL(segments[0], url));
    expect(seg.status).toBe(200);
    expect(seg.headers.get('content-type')).toBe('video/mp2t');
    const bytes = Buffer.from(await seg.arrayBuffer());
    expect(bytes[0]).toBe(0x47); // MPEG-TS sync byte
    expect(bytes.length % 188).toBe(0);
    expect((await fetch(`${cdnUrl}/assets/${pub.id}/video/hls/360p/${segments.length}.ts`)).status).toBe(404);

    const priv = await upload(key, 'clips/hls-private.mp4', 'private');
    const signed = await t.rest('POST', `/api/v1/assets/${priv.id}/signed-url`, { key, body: { expires_in: 300 } });
    const token = new URL(signed.body.data.url).searchParams.get('token')!;
    const privUrl = `${cdnUrl}/assets/${priv.id}/video/hls/360p?token=${encodeURIComponent(token)}`;
    const privList = await output(privUrl);
    expect(privList.status).toBe(200);
    const entry = privList.body
      .toString('utf8')
      .split('\n')
      .find((l) => l && !l.startsWith('#'))!;
    expect(entry).toBe(`360p/0.ts?token=${encodeURIComponent(token)}`);
    expect((await fetch(new URL(entry, privUrl))).status).toBe(200);
    expect((await fetch(`${cdnUrl}/assets/${priv.id}/video/hls/360p/0.ts`)).status).toBe(404);
  });
});
