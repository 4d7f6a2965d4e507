import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../core/paths';
import type { ConsoleOptions } from './console-options';

/** Content types of what a Vite build writes (anything else is served as bytes). */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.wasm': 'application/wasm',
};

/** Shown until the single-page app is built (`dist/console/index.html`). */
const PLACEHOLDER = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Hosting platform console</title></head>
<body><main><h1>Hosting platform console</h1><p>The console is not built yet: run <code>npm run -s build</code>.</p></main></body>
</html>
`;

/**
 * The console pages' Content-Security-Policy: everything from the bridge itself, sockets to it, and
 * images and media from {cdn_url} (thumbnails and signed links); no inline script, no framing.
 */
export function consoleCsp(baseUrl: string, cdnUrl?: string): string {
  const base = new URL(baseUrl);
  const ws = `${base.protocol === 'https:' ? 'wss' : 'ws'}://${base.host}`;
  const cdn = cdnUrl ? ` ${new URL(cdnUrl).origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data: blob:${cdn}`,
    `media-src 'self' blob:${cdn}`,
    "font-src 'self'",
    `connect-src 'self' ${ws}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * `GET /console` → `/console/`; `GET /console/…` serves the built app's files from `dist/console/`
 * (hashed `assets/` cached for a year, others revalidated by ETag), and `index.html` for any path
 * that is not a file (the app's routes: history fallback), never cached.
 */
export function registerConsoleStatic(app: FastifyInstance, opts: ConsoleOptions): void {
  const root = path.resolve(opts.staticDir ?? path.join(projectRoot(), 'dist', 'console'));
  const security = (reply: FastifyReply) =>
    reply
      .header('content-security-policy', consoleCsp(opts.baseUrl(), opts.cdnUrl?.()))
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('x-frame-options', 'DENY');

  const fileOf = async (rel: string): Promise<{ file: string; size: number; mtimeMs: number } | null> => {
    const file = path.resolve(root, `.${path.posix.sep}${rel}`);
    if (file !== root && !file.startsWith(root + path.sep)) return null;
    const st = await stat(file).catch(() => null);
    return st?.isFile() ? { file, size: st.size, mtimeMs: st.mtimeMs } : null;
  };

  const serve = async (
    req: FastifyRequest,
    reply: FastifyReply,
    found: { file: string; size: number; mtimeMs: number },
    cache: string,
  ) => {
    const etag = `W/"${found.size.toString(16)}-${Math.floor(found.mtimeMs).toString(16)}"`;
    security(reply)
      .header('content-type', TYPES[path.extname(found.file).toLowerCase()] ?? 'application/octet-stream')
      .header('cache-control', cache)
      .header('etag', etag);
    if (req.headers['if-none-match'] === etag) return reply.status(304).send();
    reply.header('content-length', String(found.size));
    return reply.status(200).send(req.method === 'HEAD' ? '' : createReadStream(found.file));
  };

  const index = async (req: FastifyRequest, reply: FastifyReply) => {
    const found = await fileOf('index.html');
    if (found) return serve(req, reply, found, 'no-store');
    return security(reply).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(PLACEHOLDER);
  };

  app.get('/console', async (req, reply) => {
    const q = req.url.indexOf('?');
    return reply.redirect(`/console/${q >= 0 ? req.url.slice(q) : ''}`, 301);
  });
  app.get('/console/', index);
  app.get('/console/*', async (req, reply) => {
    let rel: string;
    try {
      rel = decodeURIComponent((req.params as { '*': string })['*']);
    } catch {
      return reply.callNotFound();
    }
    // The console's API paths are routes of their own; an unknown one is a 404, not the app.
    if (rel.startsWith('api/') || rel.includes('\0')) return reply.callNotFound();
    if (rel === 'index.html') return index(req, reply);
    const found = await fileOf(rel);
    if (found) {
      const hashed = rel.startsWith('assets/');
      return serve(req, reply, found, hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    }
    // A missing built file is a 404 (never the page in its place); anything else is one of the app's routes.
    if (rel.startsWith('assets/')) return reply.callNotFound();
    return index(req, reply);
  });
}
