import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { InfraError, progress, seconds } from './tools';

/**
 * Debian's chromium for the console's browser tests (docs/decisions/0281-console-app.md): the tests
 * drive it through playwright-core, which never downloads a browser. `npm test` runs `infra up
 * --browser`, which installs it with apt-get when it is missing (as root, non-interactive), so a
 * fresh machine needs no manual step; `CHROMIUM_PATH` names another executable.
 */
export const chromiumPath = (): string => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function ensureChromium(): void {
  const exe = chromiumPath();
  if (existsSync(exe)) return;
  if (process.env.CHROMIUM_PATH) throw new InfraError(`infra: CHROMIUM_PATH names ${exe}, which does not exist`);
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    throw new InfraError(
      `infra: the console's browser tests need Debian's chromium at ${exe}: apt-get install -y --no-install-recommends chromium (as root)`,
    );
  const t0 = Date.now();
  progress('installing Debian chromium for the console browser tests (first run only)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const r = spawnSync('apt-get', args, { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (r.status !== 0)
      throw new InfraError(`infra: apt-get ${args[0]} failed: ${(r.stderr || r.error?.message || '').trim().split('\n').pop()}`);
  }
  if (!existsSync(exe)) throw new InfraError(`infra: apt-get installed chromium, but ${exe} is not there`);
  progress(`chromium installed (${seconds(Date.now() - t0)})`);
}
