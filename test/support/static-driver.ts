import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { requestLocal } from '../../core/outbound-http';
import type { RuntimeDriver } from '../../dataplane/runtimes/driver';

/**
 * A test-only runtime driver (docs/decisions/0285-one-road-to-a-machine.md): a site that is a folder
 * of files, served by a few lines of Node in the same sandbox Ghost runs in. Its configuration
 * becomes its environment (`STATIC_BOOT_MS` delays its first answer); `/slow/<ms>` answers after that long.
 */

const SERVER = `
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const root = process.env.STATIC_ROOT;
const server = http.createServer((req, res) => {
  // /slow/<ms>: answered after that long (a request under way with nothing flowing).
  if (req.url.startsWith('/slow/')) return void setTimeout(() => res.writeHead(200).end('slow answer'), Number(req.url.slice(6)));
  const file = path.join(root, path.normalize(decodeURIComponent(req.url.split('?')[0])).replace(/^(\\.\\.[/\\\\])+/, ''), req.url.endsWith('/') ? 'index.html' : '');
  fs.readFile(file, (err, body) => {
    if (err) return res.writeHead(404).end('not found');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-static-version': process.env.STATIC_VERSION }).end(body);
  });
});
// STATIC_BOOT_MS: how long it takes to start answering (a slow boot, for tests that wait on one).
setTimeout(() => server.listen(Number(process.env.PORT), '127.0.0.1'), Number(process.env.STATIC_BOOT_MS || 0));
`;

/** The whole driver: a runtime that is a folder of files. */
export function staticDriver(root: string): RuntimeDriver {
  const publicDir = (dir: string) => path.join(dir, 'public');
  return {
    name: 'static-folder',
    async install(spec) {
      const dir = path.join(root, `${spec.name}-${spec.version}`);
      await mkdir(dir, { recursive: true });
      await writeFile(path.join(dir, 'server.js'), SERVER);
      return { ...spec, dir, installedAt: new Date().toISOString(), installMs: 0, nodeAbi: process.versions.modules };
    },
    async workload(w) {
      await mkdir(publicDir(w.dir), { recursive: true });
      await writeFile(path.join(publicDir(w.dir), 'index.html'), '<h1>It works</h1>', { flag: 'wx' }).catch(() => undefined);
      return {
        script: 'server.js',
        cwd: w.runtimeDir,
        env: { ...w.config, STATIC_ROOT: publicDir(w.dir), STATIC_VERSION: path.basename(w.runtimeDir) },
        sandbox: {
          mounts: [
            { path: w.dir, write: false },
            { path: w.runtimeDir, write: false },
          ],
          memoryMb: 128,
          egress: [],
        },
      };
    },
    async probe(at) {
      const r = await requestLocal(at, { method: 'GET', path: '/', timeoutMs: 2_000 });
      return r.status === 200 ? String(r.headers['x-static-version']) : null;
    },
    layout: (dir) => ({ content: publicDir(dir) }),
    marker: (dir) => `STATIC_ROOT=${publicDir(dir)}`,
  };
}
