/**
 * Pinned packages from the Debian archive, installed without root (infra/debian.ts: nginx and the
 * MariaDB stand-in use it). A package built here with `dpkg-deb -b` is served from a local HTTP
 * server: fetched from the first address that answers, refused on a wrong SHA-256 or a failed check
 * without touching what is installed, and installed once per pin.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installDebianPackages } from '../../infra/debian';

let work: string;
let server: http.Server;
let base: string;
let deb: Buffer;
let digest: string;
const served: string[] = [];

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(tmpdir(), 'debian-test-'));
  const pkg = path.join(work, 'pkg');
  fs.mkdirSync(path.join(pkg, 'DEBIAN'), { recursive: true });
  fs.mkdirSync(path.join(pkg, 'usr', 'share', 'tiny'), { recursive: true });
  fs.writeFileSync(
    path.join(pkg, 'DEBIAN', 'control'),
    'Package: tiny\nVersion: 1.0\nArchitecture: all\nMaintainer: platform <ops@example.com>\nDescription: a test package\n',
  );
  fs.writeFileSync(path.join(pkg, 'usr', 'share', 'tiny', 'hello.txt'), 'hello\n');
  execFileSync('dpkg-deb', ['--root-owner-group', '-b', pkg, path.join(work, 'tiny.deb')], { stdio: 'ignore' });
  deb = fs.readFileSync(path.join(work, 'tiny.deb'));
  digest = createHash('sha256').update(deb).digest('hex');
  server = http.createServer((req, res) => {
    served.push(req.url ?? '');
    if (req.url === '/pool/tiny.deb') res.writeHead(200).end(deb);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  fs.rmSync(work, { recursive: true, force: true });
});

const install = (dir: string, over: Partial<Parameters<typeof installDebianPackages>[0]> = {}) =>
  installDebianPackages({
    name: 'tiny',
    label: 'Tiny',
    version: '1.0',
    dir,
    debs: [{ urls: [`${base}/security/tiny.deb`, `${base}/pool/tiny.deb`], sha256: digest }],
    ...over,
  });

describe('installDebianPackages', () => {
  it('fetches from the first address that answers, extracts, and installs once per pin', async () => {
    const dir = path.join(work, 'a', 'base');
    served.length = 0;
    expect(await install(dir)).toMatchObject({ installed: true });
    expect(served).toEqual(['/security/tiny.deb', '/pool/tiny.deb']);
    expect(fs.readFileSync(path.join(dir, 'usr', 'share', 'tiny', 'hello.txt'), 'utf8')).toBe('hello\n');
    expect(fs.existsSync(path.join(dir, 'debs'))).toBe(false);
    expect(await install(dir)).toMatchObject({ installed: false });
    expect(served).toHaveLength(2);
    // A new pin (here: the version) installs again.
    expect(await install(dir, { version: '1.1' })).toMatchObject({ installed: true });
  });

  it('refuses a package whose SHA-256 is not the pinned one, and installs nothing', async () => {
    const dir = path.join(work, 'b', 'base');
    const wrong = '0'.repeat(64);
    await expect(install(dir, { debs: [{ urls: [`${base}/pool/tiny.deb`], sha256: wrong }] })).rejects.toThrow(
      `has SHA-256 ${digest}, not the pinned ${wrong}`,
    );
    expect(fs.readdirSync(path.dirname(dir))).toEqual([]);
  });

  it('names every address tried when none answers', async () => {
    const dir = path.join(work, 'c', 'base');
    await expect(install(dir, { debs: [{ urls: [`${base}/x.deb`, `${base}/y.deb`], sha256: digest }] })).rejects.toThrow(
      `could not download Tiny 1.0: ${base}/x.deb (404); ${base}/y.deb (404)`,
    );
  });

  it('keeps what is installed when the new tree fails its check', async () => {
    const dir = path.join(work, 'd', 'base');
    await install(dir);
    const check = (root: string) => {
      expect(fs.existsSync(path.join(root, 'usr', 'share', 'tiny', 'hello.txt'))).toBe(true);
      throw new Error('needs libtiny.so.1');
    };
    await expect(install(dir, { version: '2.0', check })).rejects.toThrow('needs libtiny.so.1');
    expect(fs.readFileSync(path.join(dir, '.installed'), 'utf8')).toMatch(/^tiny 1\.0 /);
    expect(await install(dir)).toMatchObject({ installed: false });
    expect(fs.readdirSync(path.dirname(dir))).toEqual(['base']);
  });
});
