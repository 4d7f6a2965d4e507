import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import type { SandboxEgress, SandboxSpec } from './sandbox';

/**
 * Commerce bundles as supervised processes (docs/decisions/0130-commerce-runtime.md; docs/contracts.md,
 * "The data plane"): a storefront bundle (a Worker-style module, `index.js` or
 * `dist/server/index.js`, default export `fetch(request, env, ctx)`) runs in `workerd` from npm with
 * a capnp config generated per release; an app bundle (`server.mjs`, a Node server on `PORT`) runs
 * with node. Both are workloads of the one shared supervisor (crash restarts, port, stop), started
 * by their runtime drivers (./runtimes/bundles.ts); this file is workerd's part.
 *
 * The environment's values never touch the disk: the config declares each `env` name as a
 * `fromEnvironment` binding (a text binding whose value workerd reads from its own process
 * environment), and the supervisor passes the values as that process's environment.
 */

export type BundleKind = 'storefront' | 'app';

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
 * What a storefront's global `fetch()` may never reach (docs/decisions/0272-edge-and-egress-hardening.md),
 * beside workerd's own `local` (loopback, 0.0.0.0) and `private` (RFC 1918, CGNAT, link-local, ULA)
 * sets: the special-purpose ranges workerd counts as public (documentation, benchmarking, this
 * network, NAT64 and 6to4 that can carry a private IPv4 address, deprecated site-local, multicast),
 * and Unix sockets.
 */
export const EGRESS_DENY = [
  'local',
  'private',
  'unix',
  'unix-abstract',
  '0.0.0.0/8',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  '2002::/16',
  'fec0::/10',
  'ff00::/8',
] as const;

/** This machine's own addresses (any interface): a service of the platform listening on all of them is not a public destination. */
export function ownAddresses(): string[] {
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) out.push(a.family === 'IPv4' ? `${a.address}/32` : `${a.address.split('%')[0]}/128`);
  return [...new Set(out)];
}

/** A URL's port, or its scheme's default. */
const portOf = (u: URL): number => Number(u.port || (u.protocol === 'https:' ? 443 : 80));

/**
 * The commerce platform as a workerd external service: exactly its origin's host and port, over
 * the URL's scheme. Bound as `COMMERCE_PLATFORM` (a service binding: `env.COMMERCE_PLATFORM.fetch(…)`
 * reaches it whatever the URL's host says), so a loopback stand-in (dev and tests) is reachable
 * without opening loopback to the global `fetch()`.
 */
function commerceService(url: string): string {
  const u = new URL(url);
  const https = u.protocol === 'https:';
  // `hostname` keeps an IPv6 address's brackets, as workerd's address form wants them.
  const address = `${u.hostname}:${portOf(u)}`;
  const server = https
    ? `https = (tlsOptions = (trustBrowserCas = true), certificateHost = ${capnpString(u.hostname.replace(/^\[|\]$/g, ''))})`
    : 'http = ()';
  return `(name = "commerce-platform", external = (address = ${capnpString(address)}, ${server}))`;
}

/**
 * A capnp config for one storefront release: every `.js`/`.mjs` file of the bundle is an ES module
 * (the entry first, so it is the main module), `env` names bound from the process environment,
 * and an HTTP socket named `http` on `127.0.0.1:<port>`. Its global `fetch()` goes through the
 * `egress` network service: public addresses only (`EGRESS_DENY` and this machine's own addresses
 * refused); the commerce platform, when given, is one more service of exactly its origin, bound as
 * `COMMERCE_PLATFORM` (a service binding, not a text one: `env`'s strings stay the framework's names).
 */
export function capnpConfig(o: {
  modules: string[];
  entry: string;
  envNames: readonly string[];
  port: number;
  /** The commerce platform's URL (`COMMERCE_PLATFORM_URL`, or the local stand-in's). */
  commercePlatformUrl?: string;
  /** Addresses refused beside `EGRESS_DENY` (default: this machine's own, `ownAddresses()`). */
  denyAddresses?: readonly string[];
}): string {
  const ordered = [o.entry, ...o.modules.filter((m) => m !== o.entry)];
  const modules = ordered.map((m) => `(name = ${capnpString(m)}, esModule = embed ${capnpString(`bundle/${m}`)})`);
  const bindings = o.envNames.map((n) => `(name = ${capnpString(n)}, fromEnvironment = ${capnpString(n)})`);
  const services = ['(name = "main", worker = .storefront)'];
  const deny = [...EGRESS_DENY, ...(o.denyAddresses ?? ownAddresses())].map(capnpString);
  services.push(
    `(name = "egress", network = (allow = ["public"], deny = [${deny.join(', ')}], tlsOptions = (trustBrowserCas = true)))`,
  );
  if (o.commercePlatformUrl) {
    services.push(commerceService(o.commercePlatformUrl));
    bindings.push('(name = "COMMERCE_PLATFORM", service = "commerce-platform")');
  }
  return [
    'using Workerd = import "/workerd/workerd.capnp";',
    '',
    'const config :Workerd.Config = (',
    `  services = [\n    ${services.join(',\n    ')}\n  ],`,
    `  sockets = [(name = "http", address = ${capnpString(`127.0.0.1:${o.port}`)}, http = (), service = "main")],`,
    ');',
    '',
    'const storefront :Workerd.Worker = (',
    `  modules = [\n    ${modules.join(',\n    ')}\n  ],`,
    `  compatibilityDate = ${capnpString(COMPATIBILITY_DATE)},`,
    '  compatibilityFlags = ["nodejs_compat"],',
    `  bindings = [${bindings.join(', ')}],`,
    '  globalOutbound = "egress",',
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
    // In the sandbox workerd serves on the workload's unix socket (dataplane/sandbox.ts), else on PORT.
    "const addr = process.env.PLATFORM_LISTEN_SOCKET ? 'unix:' + process.env.PLATFORM_LISTEN_SOCKET : '127.0.0.1:' + process.env.PORT;",
    "const args = ['serve', 'config.capnp', '--socket-addr', 'http=' + addr];",
    // In the sandbox the commerce platform is the workload's one declared egress (bundleSandbox), a unix
    // socket: the config's `commerce-platform` service goes there instead of its host:port.
    'if (process.env.PLATFORM_SANDBOX_CONFIG) {',
    "  const egress = JSON.parse(require('node:fs').readFileSync(process.env.PLATFORM_SANDBOX_CONFIG, 'utf8')).egress || [];",
    "  if (egress[0]) args.push('--external-addr', 'commerce-platform=unix:' + egress[0].path);",
    '}',
    `const child = spawn(${JSON.stringify(binary)}, args, { stdio: 'inherit' });`,
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

/** A release's memory limit when its environment sets none (docs/contracts.md, "Tenant isolation": at most 1 GiB). */
export const DEFAULT_RELEASE_MEMORY_MB = 512;

/**
 * A release's sandbox: its bundle read-write; the release directory around it (the generated config
 * and launcher, which the platform writes as root) read-only, so nothing the tenant plants there is
 * ever written through; egress only to the commerce platform, when it has one.
 */
export function bundleSandbox(releaseDir: string, memoryMb: number, commercePlatformUrl?: string): SandboxSpec {
  const egress: SandboxEgress[] = [];
  if (commercePlatformUrl) {
    const u = new URL(commercePlatformUrl);
    egress.push({ host: u.hostname, port: portOf(u) });
  }
  return {
    mounts: [
      { path: releaseDir, write: false },
      { path: path.join(releaseDir, 'bundle'), write: true },
    ],
    memoryMb,
    egress,
  };
}

/**
 * Writes a storefront release's workerd config and launcher beside its bundle. The config's socket
 * address is a placeholder: the launcher names the real one at each start (the sandbox's unix
 * socket, else the port the supervisor gave).
 */
export async function writeStorefrontFiles(
  releaseDir: string,
  envNames: readonly string[],
  commercePlatformUrl?: string,
): Promise<void> {
  const bundleDir = path.join(releaseDir, 'bundle');
  const entry = storefrontEntry(bundleDir);
  if (!entry) throw new Error('the storefront bundle has no index.js or dist/server/index.js');
  const config = capnpConfig({ modules: await jsModules(bundleDir), entry, envNames, port: 0, commercePlatformUrl });
  await writeFile(path.join(releaseDir, 'config.capnp'), config);
  await writeFile(path.join(releaseDir, 'launch.cjs'), launcherSource(workerdBinary()));
}
