import { realpathSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { requestLocal } from '../../core/outbound-http';
import { bundleSandbox, DEFAULT_RELEASE_MEMORY_MB, workerdBinary, writeStorefrontFiles } from '../workerd';
import type { DriverWorkload, RuntimeDriver } from './driver';

/**
 * Commerce bundles as runtime drivers (docs/decisions/0130-commerce-runtime.md, 0285): a
 * `storefront` runs in workerd with a config generated per release, an `app` is a Node server
 * (`server.mjs` on `PORT`). The release's directory is the workload's directory: `bundle/` holds
 * the unpacked bundle (read-write inside the sandbox); the generated config and launcher sit beside
 * it, written by the platform and read-only inside. The values of the environment come as the
 * workload's `config` and never touch the disk (workerd binds each name from its own environment).
 * A release answers once `GET /` is 2xx.
 */

const bundleDir = (dir: string) => path.join(dir, 'bundle');

/** The release directory is the platform's (read-only in the sandbox), but the workload's uid must enter it. */
async function releaseDir(w: DriverWorkload): Promise<string> {
  await mkdir(w.dir, { recursive: true });
  await chmod(w.dir, 0o755);
  return w.dir;
}

const memoryOf = (w: DriverWorkload) => w.memoryMb ?? DEFAULT_RELEASE_MEMORY_MB;

const bundleDriver = (name: string, workload: RuntimeDriver['workload'], runtimeDir: () => string): RuntimeDriver => ({
  name,
  // Nothing to install per release: workerd and Node come with the platform.
  install: async (spec) => ({
    ...spec,
    dir: runtimeDir(),
    installedAt: new Date(0).toISOString(),
    installMs: 0,
    nodeAbi: process.versions.modules,
  }),
  workload,
  async probe(at, w, timeoutMs = 5_000) {
    const r = await requestLocal(at, { headers: { host: new URL(w.url).hostname }, timeoutMs, maxBodyBytes: 0 });
    if (r.status < 200 || r.status >= 300) throw new Error(`HTTP ${r.status}`);
    return 'ready';
  },
  layout: (dir) => ({ content: bundleDir(dir) }),
});

export const storefrontDriver = bundleDriver(
  'storefront',
  async (w) => {
    const dir = await releaseDir(w);
    const commerce = w.upstreams?.['commerce-platform'];
    await writeStorefrontFiles(dir, Object.keys(w.config ?? {}), commerce);
    return {
      script: 'launch.cjs',
      cwd: dir,
      env: { ...w.config },
      sandbox: { ...bundleSandbox(dir, memoryOf(w), commerce), extraReadOnly: [realpathSync(workerdBinary())] },
    };
  },
  () => path.dirname(workerdBinary()),
);

export const appDriver = bundleDriver(
  'app',
  async (w) => {
    const dir = await releaseDir(w);
    return {
      script: 'server.mjs',
      cwd: bundleDir(dir),
      env: { ...w.config },
      // V8's heap below the cgroup's limit, so a heap that grows fails in V8 before the kernel kills.
      memoryMb: Math.max(64, memoryOf(w) - 64),
      sandbox: bundleSandbox(dir, memoryOf(w), w.upstreams?.['commerce-platform']),
    };
  },
  () => path.dirname(process.execPath),
);
