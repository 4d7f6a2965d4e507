import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { type DebianPackage, installDebianPackages } from './debian';
import { InfraError, dataDir } from './tools';

/**
 * bubblewrap from the Debian archive: the sandbox every hosted workload runs in
 * (docs/decisions/0273-tenant-sandbox.md). Installed like nginx and MariaDB: the pinned .deb is
 * fetched, checked against its SHA-256 and extracted into <DATA_DIR>/bubblewrap/base once, so a
 * fresh machine needs no `apt-get`. The binary links libc, libcap2 and libselinux1 (all in Debian's
 * base system); the check runs it once.
 */
export const BUBBLEWRAP_VERSION = '0.8.0-2+deb12u1';

export const BUBBLEWRAP_DEBS: DebianPackage[] = [
  {
    urls: [
      'https://deb.debian.org/debian/pool/main/b/bubblewrap/bubblewrap_0.8.0-2%2bdeb12u1_amd64.deb',
      'https://deb.debian.org/debian-security/pool/updates/main/b/bubblewrap/bubblewrap_0.8.0-2%2bdeb12u1_amd64.deb',
    ],
    sha256: '3cc9134a3286ad01a323dcd924ba123eb634cefaeec82d774257e06308aeaadb',
  },
];

/** Where the extracted binary is (the data plane looks here unless `PLATFORM_BWRAP` names another). */
export const bubblewrapBinary = () => dataDir('bubblewrap', 'base', 'usr', 'bin', 'bwrap');

/** Downloads, verifies and extracts bubblewrap into <DATA_DIR>/bubblewrap/base, once. */
export function ensureBubblewrapInstalled(): Promise<{ installed: boolean; ms: number }> {
  return installDebianPackages({
    name: 'bubblewrap',
    label: 'bubblewrap',
    version: BUBBLEWRAP_VERSION,
    dir: dataDir('bubblewrap', 'base'),
    debs: BUBBLEWRAP_DEBS,
    check: (root) => {
      const r = spawnSync(path.join(root, 'usr', 'bin', 'bwrap'), ['--version'], { encoding: 'utf8' });
      if (r.status !== 0)
        throw new InfraError(
          `infra: bubblewrap does not run here (${(r.stderr || r.error?.message || '').trim()}); Debian: apt-get install libcap2 libselinux1`,
        );
    },
  });
}
