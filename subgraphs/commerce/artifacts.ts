import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { invalidConfiguration } from './errors';

const run = promisify(execFile);

/** Largest bundle archive accepted: 64 MiB. */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
export const ARTIFACT_ID = /^[0-9a-f]{64}$/;

/**
 * Release artifacts (docs/decisions/0130-commerce-runtime.md): a bundle directory packed into a tar
 * archive whose bytes depend only on the files (names sorted, owner, group and times fixed), stored
 * under its SHA-256. The same bundle packs to the same bytes, so it is stored (and deployed from)
 * once.
 */
export class ArtifactStore {
  constructor(private readonly root: string) {}

  pathOf(sha256: string): string {
    if (!ARTIFACT_ID.test(sha256)) throw invalidConfiguration('artifact must be a SHA-256 in hex', { field: 'artifact' });
    return path.join(this.root, `${sha256}.tar`);
  }

  async has(sha256: string): Promise<boolean> {
    return existsSync(this.pathOf(sha256));
  }

  /** Packs a directory (GNU tar, reproducible options) and stores it; returns its content address. */
  async pack(dir: string): Promise<{ sha256: string; bytes: number; stored: boolean }> {
    if (!(await stat(dir).catch(() => null))?.isDirectory()) throw invalidConfiguration(`${dir} is not a directory`);
    const { stdout } = await run(
      'tar',
      [
        '--sort=name',
        '--mtime=@0',
        '--owner=0',
        '--group=0',
        '--numeric-owner',
        '--mode=u+rw,go+r',
        '--exclude=./node_modules',
        '-cf',
        '-',
        '-C',
        dir,
        '.',
      ],
      { encoding: 'buffer', maxBuffer: MAX_ARTIFACT_BYTES },
    );
    return this.put(stdout);
  }

  /** Stores archive bytes under their SHA-256 (kept when already there); bytes that are not a tar archive are refused. */
  async put(bytes: Buffer): Promise<{ sha256: string; bytes: number; stored: boolean }> {
    if (bytes.length > MAX_ARTIFACT_BYTES) throw invalidConfiguration('the bundle is larger than 64 MiB');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const target = this.pathOf(sha256);
    if (existsSync(target)) return { sha256, bytes: bytes.length, stored: false };
    await mkdir(this.root, { recursive: true });
    const staging = `${target}.${process.pid}.${Date.now()}.staging`;
    await writeFile(staging, bytes);
    try {
      const names = (await run('tar', ['-tf', staging], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      // Only regular files and directories: a link could point the unpacking outside the release.
      const kinds = (await run('tar', ['-tvf', staging], { maxBuffer: 16 * 1024 * 1024 })).stdout.split('\n').filter(Boolean);
      const unsafe = (n: string) => n.startsWith('/') || n.split('/').includes('..');
      if (names.length === 0 || names.some(unsafe) || kinds.some((l) => !['-', 'd'].includes(l[0]))) throw new Error('unsafe');
    } catch {
      await rm(staging, { force: true });
      throw invalidConfiguration(
        'the artifact must be a tar archive of the bundle directory (files and directories, relative paths only)',
        {
          field: 'artifact',
        },
      );
    }
    await rename(staging, target);
    return { sha256, bytes: bytes.length, stored: true };
  }

  read(sha256: string): Promise<Buffer> {
    return readFile(this.pathOf(sha256));
  }

  /** Unpacks an artifact into `dest` (replaced whole). */
  async unpack(sha256: string, dest: string): Promise<void> {
    await rm(dest, { recursive: true, force: true });
    await mkdir(dest, { recursive: true });
    await run('tar', ['--no-same-owner', '-xf', this.pathOf(sha256), '-C', dest]);
  }
}
