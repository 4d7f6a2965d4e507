import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readlink, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { type LocalReply, requestLocal } from '../../core/outbound-http';
import type { SandboxEgress, SandboxSpec } from '../sandbox';
import { compileCacheEnv, compileCacheFile } from './compile-cache';
import {
  type DriverEndpoint,
  type DriverOwner,
  type DriverSql,
  type DriverWorkload,
  notPlain,
  type RuntimeDriver,
} from './driver';

/**
 * Runs the publishing software (Ghost, from the runtime cache) as a supervised site
 * (docs/decisions/0120-data-plane.md): one process per site with its own port, a SQLite database file
 * and a content directory of its own; the release's bundled themes are linked, not copied, so a
 * release change re-points them. Once the site answers, the owner is set up at once (no site is
 * left open for anyone to claim) and a custom integration gives the platform an Admin API key.
 */

/** A Ghost site as its driver sees it: `dir` holds `content/` (themes, images, data/ghost.db, logs). */
export type GhostSiteSpec = DriverWorkload;

export interface GhostAdminAccess {
  /** Ghost Admin API key (`id:secret`), for `@tryghost/admin-api`: store it encrypted. */
  adminApiKey: string;
  contentApiKey: string;
  integrationId: string;
  /** The owner's generated password when none was given (sign-in is by password reset otherwise). */
  ownerPassword: string;
}

export class GhostError extends Error {
  constructor(
    readonly code: 'site_unhealthy' | 'site_setup_failed',
    message: string,
  ) {
    super(message);
    this.name = 'GhostError';
  }
}

/** The content directory of a site. */
export function contentDir(siteDir: string): string {
  return path.join(siteDir, 'content');
}

/**
 * The site's V8 code cache (dataplane/runtimes/compile-cache.ts; decision 0335) and boot caches
 * (boot-cache.ts; decision 0405): its process's own, outside its content (backups leave it out; a
 * restore keeps it valid, as it is keyed by source).
 */
export function compileCacheDir(siteDir: string): string {
  return path.join(siteDir, 'compile-cache');
}

/** The SQLite database file of a site. */
export function databaseFile(siteDir: string): string {
  return path.join(contentDir(siteDir), 'data', 'ghost.db');
}

/**
 * Creates the site's content directory (first start) and links the release's bundled themes into it,
 * replacing links to another release (a theme the site uploaded itself is a directory and is kept).
 */
export async function prepareContent(runtimeDir: string, siteDir: string): Promise<void> {
  const content = contentDir(siteDir);
  const subs = ['data', 'images', 'files', 'media', 'logs', 'settings', 'adapters', 'themes', 'public'];
  const odd = await notPlain(
    siteDir,
    [content, ...subs.map((sub) => path.join(content, sub))].map((p) => [p, 'dir'] as const),
  );
  if (odd) throw new GhostError('site_setup_failed', `${odd.rel} is not a plain ${odd.what}`);
  for (const sub of subs) await mkdir(path.join(content, sub), { recursive: true });
  const bundled = path.join(runtimeDir, 'content', 'themes');
  const themes = existsSync(bundled) ? await readdir(bundled, { withFileTypes: true }) : [];
  for (const t of themes.filter((d) => d.isDirectory())) {
    const link = path.join(content, 'themes', t.name);
    const target = path.join(bundled, t.name);
    const current = await readlink(link).catch(() => null);
    if (current === target) continue;
    if (current !== null || !existsSync(link)) {
      await rm(link, { force: true });
      await symlink(target, link, 'dir');
    }
  }
}

/** The environment a site's process gets: Ghost reads `a__b` as the setting `a.b`. */
export function ghostEnv(spec: GhostSiteSpec, port: number): Record<string, string> {
  return {
    NODE_ENV: 'production',
    url: spec.url,
    server__host: '127.0.0.1',
    server__port: String(port),
    ...(spec.database
      ? {
          database__client: 'mysql',
          database__connection__host: spec.database.host,
          database__connection__port: String(spec.database.port),
          database__connection__user: spec.database.user,
          database__connection__password: spec.database.password,
          database__connection__database: spec.database.database,
          database__connection__charset: 'utf8mb4',
        }
      : {
          database__client: 'sqlite3',
          database__connection__filename: databaseFile(spec.dir),
          database__useNullAsDefault: 'true',
        }),
    paths__contentPath: contentDir(spec.dir),
    // Logs go to the supervisor (stdout), not to files inside the content directory.
    logging__transports: '["stdout"]',
    logging__level: 'warn',
    // No calls home from a hosted site on this machine.
    privacy__useUpdateCheck: 'false',
    privacy__useGravatar: 'false',
    privacy__useRpcPing: 'false',
    privacy__useStructuredData: 'true',
    ...spec.config,
  };
}

/** Headroom over the runtime's memory floor (V8's heap ceiling) for the rest of the process: code, buffers, SQLite. */
export const SITE_MEMORY_HEADROOM_MB = 256;

/**
 * The site's sandbox (dataplane/sandbox.ts): its own directory read-write, its release read-only;
 * egress only to its database server and its mail relay, when it has them; memory at its floor plus
 * headroom.
 */
export function ghostSandbox(spec: GhostSiteSpec): SandboxSpec {
  const egress: SandboxEgress[] = [];
  if (spec.database) egress.push({ host: spec.database.host, port: spec.database.port });
  const mailHost = spec.config?.mail__options__host;
  if (mailHost) egress.push({ host: mailHost, port: Number(spec.config?.mail__options__port ?? 25) });
  return {
    mounts: [
      { path: spec.dir, write: true },
      { path: spec.runtimeDir, write: false },
    ],
    memoryMb: (spec.memoryMb ?? 512) + SITE_MEMORY_HEADROOM_MB,
    egress,
  };
}

type Reply = LocalReply;

/** One HTTP request straight to a site's port, as the public host (Ghost checks Origin against its url). */
export function siteRequest(
  port: number | { port: number; socketPath?: string },
  publicUrl: string,
  method: string,
  p: string,
  opts: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Reply> {
  const u = new URL(publicUrl);
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return requestLocal(port, {
    method,
    path: p,
    timeoutMs: opts.timeoutMs ?? 30_000,
    ...(payload !== undefined ? { body: payload } : {}),
    headers: {
      host: u.host,
      origin: u.origin,
      'x-forwarded-proto': u.protocol.replace(':', ''),
      accept: 'application/json',
      ...(payload ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
  });
}

/**
 * The Ghost driver: a site is `index.js` of the release, run by Node with its content directory and
 * SQLite file (or MySQL database) under its own directory; it answers once its Admin API's public
 * site endpoint says 200 (Ghost boots, migrates its database, then serves), and its first set-up
 * makes the owner at once (no site is left open for anyone to claim) and the platform's integration.
 */
export const ghostDriver: RuntimeDriver = {
  name: 'ghost',
  async workload(w) {
    await prepareContent(w.runtimeDir, w.dir);
    // A wake compiles Ghost's 3,900 modules again: the code cache saves a tenth of its CPU (decision 0335);
    // the release's module resolutions and card-asset minification are kept beside it (decision 0405).
    const cache = compileCacheFile();
    const sandbox = ghostSandbox(w);
    return {
      script: 'index.js',
      cwd: w.runtimeDir,
      memoryMb: w.memoryMb,
      env: (port: number) => ({ ...compileCacheEnv(cache, compileCacheDir(w.dir), w.runtimeDir), ...ghostEnv(w, port) }),
      sandbox: { ...sandbox, extraReadOnly: [...(sandbox.extraReadOnly ?? []), cache] },
    };
  },
  async probe(at, w, timeoutMs = 5_000) {
    const r = await siteRequest(at, w.url, 'GET', '/ghost/api/admin/site/', { timeoutMs });
    if (r.status !== 200) return null;
    return (JSON.parse(r.body) as { site?: { version?: string } }).site?.version ?? 'unknown';
  },
  async configure(at, w, owner) {
    const access = await setUpGhost(at, w.url, owner);
    return {
      integration_id: access.integrationId,
      admin_api_key: access.adminApiKey,
      owner_password: access.ownerPassword,
    };
  },
  // Logs go to stdout (ghostEnv); `logs/` is Ghost's own and never part of a backup.
  layout: (dir) => ({ content: contentDir(dir), database: databaseFile(dir), transient: ['logs'] }),
  rekey: (db, access) => rekeyGhost(db, access.integrationId),
  marker: (dir) => `paths__contentPath=${contentDir(dir)}`,
};

/**
 * A staging copy's own access (docs/decisions/0360-data-steps-on-the-node.md): the platform's
 * integration in the copied database gets a new Admin and Content API key (the source's keys do not
 * open the copy) and the copied sessions are dropped. The owner stays the source's.
 */
async function rekeyGhost(db: DriverSql, integrationId: string): Promise<Record<string, string>> {
  const found = await db.get<{ id: string }>(
    "SELECT id FROM api_keys WHERE integration_id = ? AND type = 'admin'",
    integrationId,
  );
  if (!found) throw new GhostError('site_setup_failed', 'the copied database has no platform integration');
  const adminId = randomBytes(12).toString('hex');
  const adminSecret = randomBytes(32).toString('hex');
  await db.run(
    "UPDATE api_keys SET id = ?, secret = ? WHERE integration_id = ? AND type = 'admin'",
    adminId,
    adminSecret,
    integrationId,
  );
  await db.run(
    "UPDATE api_keys SET id = ?, secret = ? WHERE integration_id = ? AND type = 'content'",
    randomBytes(12).toString('hex'),
    randomBytes(13).toString('hex'),
    integrationId,
  );
  await db.run('DELETE FROM sessions');
  return { admin_api_key: `${adminId}:${adminSecret}` };
}

/** True when the site still has no owner (anyone reaching it could claim it). */
export async function openForSetup(at: DriverEndpoint, url: string): Promise<boolean> {
  const r = await siteRequest(at, url, 'GET', '/ghost/api/admin/authentication/setup/');
  const setup = (JSON.parse(r.body) as { setup?: { status: boolean }[] }).setup;
  return setup?.[0]?.status === false;
}

/**
 * Sets up the owner, signs in as them once (a first sign-in needs no device verification) and
 * creates the platform's custom integration, answering its Admin API key.
 */
export async function setUpGhost(
  port: DriverEndpoint,
  url: string,
  owner: DriverOwner & { password?: string },
  integrationName = 'Hosting platform',
): Promise<GhostAdminAccess> {
  const password = owner.password ?? `${randomBytes(18).toString('base64url')}!9a`;
  const fail = (what: string, r: Reply) =>
    new GhostError('site_setup_failed', `${what} answered ${r.status}: ${r.body.slice(0, 300)}`);
  const setup = await siteRequest(port, url, 'POST', '/ghost/api/admin/authentication/setup/', {
    body: { setup: [{ name: owner.name, email: owner.email, password, blogTitle: owner.title }] },
  });
  if (setup.status !== 201) throw fail('owner setup', setup);
  const session = await siteRequest(port, url, 'POST', '/ghost/api/admin/session/', {
    body: { username: owner.email, password },
  });
  if (session.status !== 201) throw fail('owner sign-in', session);
  const cookie = (session.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
  const created = await siteRequest(port, url, 'POST', '/ghost/api/admin/integrations/?include=api_keys', {
    body: { integrations: [{ name: integrationName }] },
    headers: { cookie },
  });
  if (created.status !== 201) throw fail('integration', created);
  const integration = (
    JSON.parse(created.body) as {
      integrations: { id: string; api_keys: { type: string; id: string; secret: string }[] }[];
    }
  ).integrations[0];
  const admin = integration.api_keys.find((k) => k.type === 'admin');
  const content = integration.api_keys.find((k) => k.type === 'content');
  if (!admin || !content) throw new GhostError('site_setup_failed', 'the integration has no API keys');
  // The sign-in was only for this; end it.
  await siteRequest(port, url, 'DELETE', '/ghost/api/admin/session/', { headers: { cookie } }).catch(() => undefined);
  return {
    // The Admin API serialises an admin key's secret as `id:secret` already.
    adminApiKey: admin.secret.includes(':') ? admin.secret : `${admin.id}:${admin.secret}`,
    contentApiKey: content.secret,
    integrationId: integration.id,
    ownerPassword: password,
  };
}
