import Fastify, { type FastifyInstance } from 'fastify';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type mongoose from 'mongoose';
import { loadConfig } from '../../core/config';
import { closeListener } from '../../core/http-close';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import type { Principal } from '../../core/principal';
import { newId } from '../../core/ids';
import { FsBlobStore } from '../../core/blobs/fs-blob-store';
import { assetModels } from '../../subgraphs/assets/records/model';
import { EicarScanner } from '../../subgraphs/assets/scanning/scanner';
import { AssetsService } from '../../subgraphs/assets/storage/service';
import { assetsSettingsSchema } from '../../subgraphs/assets/settings';
import { assetsUploadPlane } from '../../subgraphs/assets/uploads/plane';
import { installLingeringClose } from '../../rest-bridge/lingering-close';
import { assetsCdnPlane } from '../../subgraphs/assets/delivery/cdn-plane';

/** The assets services and both data planes on bare Fastify, against the real MongoDB-wire server. */
export interface Harness {
  conn: mongoose.Connection;
  assets: AssetsService;
  blobRoot: string;
  /** This harness's physical object-events topic. */
  objectsTopic: string;
  bridge: FastifyInstance;
  cdn: FastifyInstance;
  bridgeUrl: string;
  cdnUrl: string;
  principal(opts?: Partial<Principal>): Principal;
  headers(p: Principal, extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

export async function startHarness(env: Record<string, string> = {}): Promise<Harness> {
  const db = `t_assets_${randomBytes(4).toString('hex')}`;
  const conn = await connectMongo(`mongodb://127.0.0.1:27017/${db}`);
  const m = assetModels(conn);
  await ensureIndexes(conn);
  const blobRoot = await mkdtemp(path.join(tmpdir(), 'assets-'));
  const settings = assetsSettingsSchema.parse({ ASSETS_DELETE_DELAY_MS: '200', ...env });
  const objectsTopic = `t${randomBytes(4).toString('hex')}.assets.objects`;
  const cfg = loadConfig();
  const assets = new AssetsService(m, new FsBlobStore(blobRoot), new EicarScanner(), settings, cfg, () => objectsTopic);
  // Bearer keys of this harness: each `headers(p)` call mints one for `p`.
  const keys = new Map<string, Principal>();
  const bridge = Fastify();
  // As on the bridge: a body refused while it arrives is drained after the answer.
  installLingeringClose(bridge);
  await bridge.register(async (scope) =>
    assetsUploadPlane(scope, assets, async (req) => {
      const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
      return (m && keys.get(m[1])) ?? null;
    }),
  );
  const cdn = Fastify();
  await cdn.register(async (scope) => assetsCdnPlane(scope, assets));
  const bridgeUrl = await bridge.listen({ port: 0, host: '127.0.0.1' });
  const cdnUrl = await cdn.listen({ port: 0, host: '127.0.0.1' });
  cfg.baseUrl = bridgeUrl;
  cfg.cdnUrl = cdnUrl;
  return {
    conn,
    assets,
    blobRoot,
    objectsTopic,
    bridge,
    cdn,
    bridgeUrl,
    cdnUrl,
    principal: (opts = {}) => ({
      accountId: newId(),
      accountSlug: 'acct',
      plan: 'free',
      keyId: newId(),
      role: 'owner',
      scopes: [],
      ...opts,
    }),
    headers: (p, extra = {}) => {
      const key = randomBytes(12).toString('hex');
      keys.set(key, p);
      return { authorization: `Bearer ${key}`, ...extra };
    },
    async close() {
      await closeListener(bridge);
      await closeListener(cdn);
      await conn.dropDatabase().catch(() => undefined);
      await conn.close();
      await rm(blobRoot, { recursive: true, force: true });
    },
  };
}

export function form(file: Buffer | string, name: string, fields: Record<string, string> = {}): FormData {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  fd.append('file', new Blob([typeof file === 'string' ? Buffer.from(file) : file]), name);
  return fd;
}

/** A tiny valid PNG (1×1). */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
