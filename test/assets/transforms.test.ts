import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import type { AssetsService } from '../../subgraphs/assets/storage/service';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** Image transformations and their delivery, through the real bridge, router and CDN listener. */
describe('assets transformations', () => {
  let t: TestPlatform;
  let blobDir: string;
  let cdnUrl: string;
  let svc: AssetsService;
  let photo: Buffer;
  beforeAll(async () => {
    blobDir = await mkdtemp(path.join(tmpdir(), 'assets-tr-'));
    t = await startTestPlatform({ ASSETS_BLOB_DIR: blobDir });
    cdnUrl = t.platform.cdnUrl!;
    svc = (t.platform.services as any).assets.assets as AssetsService;
    // 1200×800 JPEG with a gradient and EXIF that a derivative must not carry.
    const raw = Buffer.alloc(1200 * 800 * 3);
    for (let i = 0; i < raw.length; i++) raw[i] = (i * 7) % 251;
    photo = await sharp(raw, { raw: { width: 1200, height: 800, channels: 3 } })
      .jpeg({ quality: 90 })
      .withExif({ IFD0: { Copyright: 'secret-owner', Artist: 'someone' } })
      .toBuffer();
  });
  afterAll(async () => {
    await t.stop();
    await rm(blobDir, { recursive: true, force: true });
  });

  const upload = async (key: string, body: Buffer | string, fields: Record<string, string>, name = 'photo.jpg') => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    fd.append('file', new Blob([body]), name);
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const bytes = async (url: string) => {
    const res = await fetch(url);
    return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
  };
  const cdn = (u: string) => u.replace(/^https?:\/\/[^/]+/, cdnUrl);

  it('creates (legacy and typed), lists, refuses duplicates and bad specs, deletes', async () => {
    const { key } = await t.createKey();
    const legacy = await t.rest('POST', '/api/v1/assets/transformations', {
      key,
      body: { name: 'card', width: 300, fit: 'inside', format: 'jpeg', quality: 70 },
    });
    expect(legacy.status).toBe(201);
    expect(legacy.body.data).toMatchObject({
      name: 'card',
      version: 1,
      definition: {
        operations: [{ type: 'resize', width: 300, height: null, fit: 'inside', gravity: 'center' }],
        format: 'jpeg',
        quality: 70,
      },
      eager: { enabled: false },
    });
    const typed = await t.rest('POST', '/api/v1/assets/transformations', {
      key,
      body: {
        name: 'thumb',
        version: 2,
        definition: { operations: [{ type: 'resize', width: 320, height: 200, fit: 'cover' }], format: 'webp', quality: 70 },
        eager: { enabled: true },
      },
    });
    expect(typed.status).toBe(201);
    expect(typed.body.data).toMatchObject({ name: 'thumb', version: 2, eager: { enabled: true } });
    expect((await t.rest('POST', '/api/v1/assets/transformations', { key, body: { name: 'thumb', width: 10 } })).status).toBe(
      409,
    );
    const bad = await t.rest('POST', '/api/v1/assets/transformations', { key, body: { name: 'x', width: 10, fit: 'stretch' } });
    expect(bad.status).toBe(400);
    expect(bad.body.success).toBe(false);
    const list = await t.rest('GET', '/api/v1/assets/transformations', { key });
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: any) => d.name)).toEqual(['card', 'thumb']);
    // Another account sees none of them.
    const other = await t.createKey();
    expect((await t.rest('GET', '/api/v1/assets/transformations', { key: other.key })).body.data).toEqual([]);
    expect((await t.rest('DELETE', '/api/v1/assets/transformations/card', { key })).status).toBe(200);
    expect((await t.rest('DELETE', '/api/v1/assets/transformations/card', { key })).status).toBe(404);
  });

  it('materialises real derivatives (WebP, AVIF, JPEG; sizes; metadata stripped) and lists them', async () => {
    const { key } = await t.createKey();
    const mk = (body: unknown) => t.rest('POST', '/api/v1/assets/transformations', { key, body });
    await mk({
      name: 'thumb',
      version: 2,
      definition: { operations: [{ type: 'resize', width: 320, height: 200, fit: 'cover' }], format: 'webp', quality: 70 },
    });
    await mk({
      name: 'tiny-avif',
      version: 2,
      definition: { operations: [{ type: 'resize', width: 120 }], format: 'avif', quality: 50 },
    });
    await mk({ name: 'card', width: 300, height: 300, fit: 'inside', format: 'jpeg', quality: 70 });
    const up = await upload(key, photo, { key: 'img/photo.jpg', visibility: 'public' });
    expect(up.status).toBe(201);
    const id = up.body.data.id;

    const made = await t.rest('POST', `/api/v1/assets/${id}/transforms`, { key, body: { transformation: 'thumb' } });
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({
      asset_id: id,
      version: 1,
      format: 'webp',
      mime_type: 'image/webp',
      width: 320,
      height: 200,
    });

    const thumb = await bytes(`${cdnUrl}/t/thumb/assets/${id}`);
    expect(thumb.status).toBe(200);
    expect(thumb.type).toBe('image/webp');
    const tm = await sharp(thumb.body).metadata();
    expect([tm.format, tm.width, tm.height, tm.exif]).toEqual(['webp', 320, 200, undefined]);

    const avif = await bytes(`${cdnUrl}/t/tiny-avif/assets/${id}`);
    expect(avif.type).toBe('image/avif');
    const am = await sharp(avif.body).metadata();
    expect([am.format, am.compression, am.width, am.height]).toEqual(['heif', 'av1', 120, 80]);

    const card = await bytes(`${cdnUrl}/t/card/assets/${id}`);
    const cm = await sharp(card.body).metadata();
    expect([cm.format, cm.width, cm.height, cm.exif]).toEqual(['jpeg', 300, 200, undefined]);
    expect((await sharp(photo).metadata()).exif).toBeDefined();

    const ders = await t.rest('GET', `/api/v1/assets/${id}/derivatives`, { key });
    expect(ders.status).toBe(200);
    expect(ders.body.data.map((d: any) => `${d.format}:${d.width}x${d.height}`).sort()).toEqual([
      'avif:120x80',
      'jpeg:300x200',
      'webp:320x200',
    ]);
    // Unknown preset → 404; another account cannot list this asset's derivatives.
    expect((await fetch(`${cdnUrl}/t/nope/assets/${id}`)).status).toBe(404);
    const other = await t.createKey();
    expect((await t.rest('GET', `/api/v1/assets/${id}/derivatives`, { key: other.key })).status).toBe(404);
  });

  it('eager definitions materialise on upload, as a job run by the worker', async () => {
    const { key } = await t.createKey();
    await t.rest('POST', '/api/v1/assets/transformations', {
      key,
      body: {
        name: 'eager-s',
        version: 2,
        definition: { operations: [{ type: 'resize', width: 240 }], format: 'webp' },
        eager: { enabled: true },
      },
    });
    const up = await upload(key, photo, { key: 'img/eager.jpg', visibility: 'public' });
    const id = up.body.data.id;
    let ders: any[] = [];
    for (let i = 0; i < 100 && ders.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      ders = (await t.rest('GET', `/api/v1/assets/${id}/derivatives`, { key })).body.data;
    }
    expect(ders).toEqual([expect.objectContaining({ format: 'webp', width: 240, height: 160, version: 1 })]);
  });

  it('single flight: 50 concurrent requests for an uncached transform compute it once', async () => {
    const { key } = await t.createKey();
    await t.rest('POST', '/api/v1/assets/transformations', {
      key,
      body: {
        name: 'hero',
        version: 2,
        definition: { operations: [{ type: 'resize', width: 800, height: 400, fit: 'cover' }], format: 'webp' },
      },
    });
    const up = await upload(key, photo, { key: 'img/hero.jpg', visibility: 'public' });
    const before = svc.transforms.computations;
    const all = await Promise.all(Array.from({ length: 50 }, () => bytes(`${cdnUrl}/t/hero/assets/${up.body.data.id}`)));
    expect(svc.transforms.computations - before).toBe(1);
    expect(all.every((r) => r.status === 200 && r.body.equals(all[0].body))).toBe(true);
    expect((await sharp(all[0].body).metadata()).width).toBe(800);
    // Later requests are served from the stored derivative.
    await bytes(`${cdnUrl}/t/hero/assets/${up.body.data.id}`);
    expect(svc.transforms.computations - before).toBe(1);
  });

  it('signed /tr/ addresses: issued by signed-url, refused when tampered or expired', async () => {
    const { key } = await t.createKey();
    await t.rest('POST', '/api/v1/assets/transformations', {
      key,
      body: {
        name: 'sq',
        version: 2,
        definition: { operations: [{ type: 'resize', width: 100, height: 100, fit: 'cover', gravity: 'north' }], format: 'png' },
      },
    });
    const up = await upload(key, photo, { key: 'img/private.jpg', visibility: 'private' });
    const id = up.body.data.id;
    // A private asset has no named (public) transform.
    expect((await fetch(`${cdnUrl}/t/sq/assets/${id}`)).status).toBe(404);
    const signed = await t.rest('POST', `/api/v1/assets/${id}/signed-url`, {
      key,
      body: { expires_in: 120, transformation: 'sq' },
    });
    expect(signed.status).toBe(201);
    const url = cdn(signed.body.data.url);
    expect(url).toMatch(new RegExp(`/assets/${id}/tr/w_100,h_100,c_cover,g_north,f_png,q_80/photo\\.png\\?exp=\\d+&sig=`));
    const ok = await bytes(url);
    expect(ok.status).toBe(200);
    const m = await sharp(ok.body).metadata();
    expect([m.format, m.width, m.height]).toEqual(['png', 100, 100]);

    const before = svc.transforms.computations;
    const tampered = [
      url.replace('w_100', 'w_200'),
      url.replace(/sig=./, (s) => `sig=${s.endsWith('A') ? 'B' : 'A'}`),
      url.replace(/exp=\d+/, (s) => `exp=${Number(s.slice(4)) + 60}`),
      url.replace(id, 'someoneelse'),
      url.split('?')[0],
    ];
    for (const u of tampered) expect((await fetch(u)).status).toBe(403);
    // Correctly signed but expired: 403 too.
    const pathname = new URL(url).pathname;
    const exp = Math.floor(Date.now() / 1000) - 5;
    expect((await fetch(`${cdnUrl}${pathname}?exp=${exp}&sig=${svc.transforms.signPath(pathname, exp)}`)).status).toBe(403);
    expect(svc.transforms.computations).toBe(before);
    // Unknown definition → 404; max_downloads does not apply to a transform address.
    expect(
      (await t.rest('POST', `/api/v1/assets/${id}/signed-url`, { key, body: { expires_in: 60, transformation: 'none' } })).status,
    ).toBe(404);
    expect(
      (
        await t.rest('POST', `/api/v1/assets/${id}/signed-url`, {
          key,
          body: { expires_in: 60, transformation: 'sq', max_downloads: 1 },
        })
      ).status,
    ).toBe(400);
  });

  it('a quarantined, failed or non-image asset has no transform and no derivative', async () => {
    const { key } = await t.createKey();
    await t.rest('POST', '/api/v1/assets/transformations', { key, body: { name: 'w', width: 64, format: 'webp' } });
    const up = await upload(key, photo, { key: 'img/q.jpg', visibility: 'public' });
    const id = up.body.data.id;
    expect((await t.rest('POST', `/api/v1/assets/${id}/transforms`, { key, body: { transformation: 'w' } })).status).toBe(201);
    const signed = cdn(
      (await t.rest('POST', `/api/v1/assets/${id}/signed-url`, { key, body: { expires_in: 120, transformation: 'w' } })).body.data
        .url,
    );
    expect((await fetch(signed)).status).toBe(200);

    for (const status of ['quarantined', 'failed']) {
      // A later scan verdict (or a failed processing) changes the record; this process forgets its cache.
      await svc.m.Asset.updateOne(
        { _id: id },
        { $set: { status, quarantineStatus: status === 'quarantined' ? 'quarantined' : 'none' } },
      );
      svc.forget(id);
      const before = svc.transforms.computations;
      expect((await fetch(`${cdnUrl}/t/w/assets/${id}`)).status).toBe(404);
      expect((await fetch(signed)).status).toBe(404);
      const tr = await t.rest('POST', `/api/v1/assets/${id}/transforms`, { key, body: { transformation: 'w' } });
      expect(tr.status).toBe(409);
      const ders = await t.rest('GET', `/api/v1/assets/${id}/derivatives`, { key });
      expect(ders.body.data).toEqual([]);
      expect(svc.transforms.computations).toBe(before);
    }

    const txt = await upload(key, 'plain text', { key: 'a.txt', visibility: 'public' }, 'a.txt');
    expect(
      (await t.rest('POST', `/api/v1/assets/${txt.body.data.id}/transforms`, { key, body: { transformation: 'w' } })).status,
    ).toBe(409);
    expect((await fetch(`${cdnUrl}/t/w/assets/${txt.body.data.id}`)).status).toBe(404);
  });
});
