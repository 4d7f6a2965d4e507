import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Supervisor, WorkloadStatus } from './supervisor';

/**
 * Commerce bundles as supervised processes (docs/decisions/0130-commerce-runtime.md; docs/contracts.md,
 * "The data plane"): a storefront bundle (a Worker-style module, `index.js` or
 * `dist/server/index.js`, default export `fetch(request, env, ctx)`) runs in `workerd` from npm with
 * a capnp config generated per release; an app bundle (`server.mjs`, a Node server on `PORT`) runs
 * with node. Both are workloads of the one shared supervisor (crash restarts, port, stop).
 *
 * The environment's values never touch the disk: the config declares each `env` name as a
 * `fromEnvironment` binding (a text binding whose value workerd reads from its own process
 * environment), and the supervisor passes the values as that process's environment.
 */

export type BundleKind = 'storefront' | 'app';

/** The storefront framework's `env` names (docs/contracts.md, "The data plane"). */
export const STOREFRONT_ENV_NAMES = [
  'PUBLIC_STORE_DOMAIN',
  'PUBLIC_STOREFRONT_API_TOKEN',
  'PRIVATE_STOREFRONT_API_TOKEN',
  'PUBLIC_STOREFRONT_ID',
  'PUBLIC_CUSTOMER_ACCOUNT_API_CLIENT_ID',
  'PUBLIC_CUSTOMER_ACCOUNT_API_URL',
  'SESSION_SECRET',
] as const;
/** An app's env names (docs/contracts.md, "The data plane"); `PORT` is the supervisor's. */
export const APP_ENV_NAMES = ['SHOPIFY_API_KEY', 'SHOPIFY_API_SECRET', 'SCOPES', 'SHOPIFY_APP_URL'] as const;

/** Workers' compatibility date the generated configs pin (workerd accepts dates up to its own). */
export const COMPATIBILITY_DATE = '2025-01-01';

/** The storefront entry module of a bundle, relative to its root; null when there is none. */
export function storefrontEntry(dir: string): string | null {
  for (const rel of ['index.js', 'dist/server/index.js']) if (existsSync(path.join(dir, rel))) return rel;
  return null;
}

/** What a bundle directory holds: a storefront module or an app server; null when neither. */
export function bundleKind(dir: string): BundleKind | null {
  if (storefrontEntry(dir)) return 'storefront';
  if (existsSync(path.join(dir, 'server.mjs'))) return 'app';
  return null;
}

/** The workerd executable the `workerd` package installed for this platform. */
export function workerdBinary(): string {
  const mod = require('workerd') as { default: string };
  return mod.default;
}

const capnpString = (s: string) => JSON.stringify(s);

/**
 * A capnp config for one storefront release: every `.js`/`.mjs` file of the bundle is an ES module
 * (the entry first, so it is the main module), `env` names bound from the process environment,
 * and an HTTP socket named `http` on `127.0.0.1:<port>`.
 */
export function capnpConfig(o: { modules: string[]; entry: string; envNames: readonly string[]; port: number }): string {
  const ordered = [o.entry, ...o.modules.filter((m) => m !== o.entry)];
  const modules = ordered.map((m) => `(name = ${capnpString(m)}, esModule = embed ${capnpString(`bundle/${m}`)})`);
  const bindings = o.envNames.map((n) => `(name = ${capnpString(n)}, fromEnvironment = ${capnpString(n)})`);
  return [
    'using Workerd = import "/workerd/workerd.capnp";',
    '',
    'const config :Workerd.Config = (',
    '  services = [(name = "main", worker = .storefront)],',
    `  sockets = [(name = "http", address = ${capnpString(`127.0.0.1:${o.port}`)}, http = (), service = "main")],`,
    ');',
    '',
    'const storefront :Workerd.Worker = (',
    `  modules = [\n    ${modules.join(',\n    ')}\n  ],`,
    `  compatibilityDate = ${capnpString(COMPATIBILITY_DATE)},`,
    '  compatibilityFlags = ["nodejs_compat"],',
    `  bindings = [${bindings.join(', ')}],`,
    ');',
    '',
  ].join('\n');
}

/**
 * The launcher the supervisor runs for a storefront: workerd as its child, signals passed on, its
 * exit code kept; when the platform dies without stopping it, workerd is stopped too.
 */
function launcherSource(binary: string): string {
  return [
    "'use strict';",
    "const { spawn } = require('node:child_process');",
    `const child = spawn(${JSON.stringify(binary)}, ['serve', 'config.capnp', '--socket-addr', 'http=127.0.0.1:' + process.env.PORT], { stdio: 'inherit' });`,
    "for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => child.kill(s));",
    "child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));",
    "child.on('error', (e) => { console.error('workerd: ' + e.message); process.exit(1); });",
    // The platform was killed (its child is re-parented): workerd goes too, instead of holding its port as an orphan.
    'const parent = process.ppid;',
    "setInterval(() => { if (process.ppid !== parent) child.kill('SIGTERM'); }, 1000).unref();",
    '',
  ].join('\n');
}

async function jsModules(root: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(root, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && !e.name.startsWith('.')) out.push(...(await jsModules(root, r)));
    } else if (/\.m?js$/.test(e.name)) out.push(r);
  }
  return out.sort();
}

export interface BundleRun {
  /** The workload id (the release id). */
  id: string;
  kind: BundleKind;
  /** The release's directory: `bundle/` holds the unpacked bundle; the config and launcher go beside it. */
  releaseDir: string;
  /** The values for the process, by the framework's names (only these reach it, plus PATH and HOME). */
  env: Record<string, string>;
  memoryMb?: number;
}

/** Adds a release's process to the supervisor (storefront: workerd via its launcher; app: node server.mjs). */
export async function addBundle(supervisor: Supervisor, run: BundleRun): Promise<WorkloadStatus> {
  const bundleDir = path.join(run.releaseDir, 'bundle');
  if (run.kind === 'app') {
    return supervisor.add({ id: run.id, script: 'server.mjs', cwd: bundleDir, env: { ...run.env }, memoryMb: run.memoryMb });
  }
  const entry = storefrontEntry(bundleDir);
  if (!entry) throw new Error('the storefront bundle has no index.js or dist/server/index.js');
  const status = await supervisor.add({ id: run.id, script: 'launch.cjs', cwd: run.releaseDir, env: { ...run.env } });
  const names = [...new Set([...STOREFRONT_ENV_NAMES, ...Object.keys(run.env)])];
  await mkdir(run.releaseDir, { recursive: true });
  await writeFile(
    path.join(run.releaseDir, 'config.capnp'),
    capnpConfig({ modules: await jsModules(bundleDir), entry, envNames: names, port: status.port }),
  );
  await writeFile(path.join(run.releaseDir, 'launch.cjs'), launcherSource(workerdBinary()));
  return status;
}
