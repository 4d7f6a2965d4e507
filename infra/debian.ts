import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { InfraError, isInstalled, logsDir, markInstalled, progress, run, seconds, sha256, shown } from './tools';

/** One pinned .deb: where it may be fetched (tried in order) and the SHA-256 it must have. */
export interface DebianPackage {
  urls: string[];
  sha256: string;
}

export interface DebianInstall {
  /** Lower-case name: the install stamp and `<DATA_DIR>/logs/<name>-install.log`. */
  name: string;
  /** How messages name it. */
  label: string;
  version: string;
  /** Where the packages' files end up (`<DATA_DIR>/<name>/base`). */
  dir: string;
  debs: DebianPackage[];
  /** Checks the extracted tree (its root passed) before it is put in place; throws to refuse it. */
  check?: (root: string) => void;
}

/**
 * Installs pinned packages from the Debian archive without root, once: each .deb is fetched from
 * the first of its addresses that answers, checked against its SHA-256 before anything is
 * extracted, and unpacked with `dpkg-deb -x` into a temporary folder that replaces `dir` only when
 * complete and checked (a failure leaves `dir` as it was and removes the temporary folder). A stamp naming the version and the packages' digests makes later calls return at once;
 * a changed pin installs again. No apt lists are needed, so a fresh CI machine can install.
 */
export async function installDebianPackages(i: DebianInstall): Promise<{ installed: boolean; ms: number }> {
  const t0 = Date.now();
  const stamp = `${i.name} ${i.version} ${sha256(i.debs.map((d) => d.sha256).join(','))}`;
  if (isInstalled(i.dir, stamp)) return { installed: false, ms: Date.now() - t0 };
  if (spawnSync('dpkg-deb', ['--version']).status !== 0)
    throw new InfraError(`infra: ${i.label} is installed from Debian packages; \`dpkg-deb\` is needed (apt-get install dpkg)`);
  progress(`installing ${i.label} ${i.version} from the Debian archive (first run only)…`);
  const tmp = `${i.dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  try {
    fs.mkdirSync(path.join(tmp, 'debs'), { recursive: true });
    const deb = (n: number) => path.join(tmp, 'debs', `${n}.deb`);
    await Promise.all(i.debs.map((d, n) => download(i, d, deb(n))));
    for (let n = 0; n < i.debs.length; n++)
      await run('dpkg-deb', ['-x', deb(n), tmp], `extracting ${i.label}`, logsDir(`${i.name}-install.log`));
    fs.rmSync(path.join(tmp, 'debs'), { recursive: true, force: true });
    i.check?.(tmp);
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  fs.rmSync(i.dir, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(i.dir), { recursive: true });
  fs.renameSync(tmp, i.dir);
  markInstalled(i.dir, stamp);
  progress(`${i.label} ${i.version} installed in ${shown(i.dir)} (${seconds(Date.now() - t0)})`);
  return { installed: true, ms: Date.now() - t0 };
}

async function download(i: DebianInstall, d: DebianPackage, to: string): Promise<void> {
  const tried: string[] = [];
  for (const url of d.urls) {
    const res = await fetch(url).catch((e: Error) => e);
    if (res instanceof Error || !res.ok) {
      tried.push(`${url} (${res instanceof Error ? res.message : res.status})`);
      continue;
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    const got = createHash('sha256').update(bytes).digest('hex');
    if (got !== d.sha256) throw new InfraError(`infra: ${url} has SHA-256 ${got}, not the pinned ${d.sha256}`);
    fs.writeFileSync(to, bytes);
    return;
  }
  throw new InfraError(`infra: could not download ${i.label} ${i.version}: ${tried.join('; ')}`);
}
