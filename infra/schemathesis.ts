import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { InfraError, dataDir, logsDir, progress, run } from './tools';

/**
 * The property-based API fuzzer of the contract stage (`test/contract/fuzz.test.ts`): schemathesis
 * from PyPI in a virtual environment under `<DATA_DIR>/schemathesis/` (git-ignored with `.data/`),
 * installed once and reused, like the engines. Pinned: its CLI flags and checks change between
 * releases.
 */
export const SCHEMATHESIS_VERSION = '4.32.5';

const venvDir = () => dataDir('schemathesis', 'venv');
const marker = () => path.join(venvDir(), 'installed-version');
export const schemathesisBin = () => path.join(venvDir(), 'bin', 'st');

function python(): string {
  for (const cmd of [process.env.PYTHON, 'python3', 'python'].filter((c): c is string => !!c)) {
    const r = spawnSync(cmd, ['-c', 'import sys, venv; print(sys.version_info >= (3, 9))'], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim() === 'True') return cmd;
  }
  throw new InfraError(
    'infra: the API fuzz stage needs Python 3.9 or newer with venv (python3 -m venv); install it or set PYTHON',
  );
}

/** The `st` executable, installing schemathesis first when it is missing or another version. */
export async function ensureSchemathesis(): Promise<string> {
  if (
    fs.existsSync(schemathesisBin()) &&
    fs.existsSync(marker()) &&
    fs.readFileSync(marker(), 'utf8').trim() === SCHEMATHESIS_VERSION
  ) {
    return schemathesisBin();
  }
  const log = logsDir('schemathesis-install.log');
  progress(`installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI into ${venvDir()}`);
  fs.rmSync(venvDir(), { recursive: true, force: true });
  await run(python(), ['-m', 'venv', venvDir()], 'creating the schemathesis virtual environment', log);
  const pip = path.join(venvDir(), 'bin', 'pip');
  await run(
    pip,
    ['install', '--disable-pip-version-check', '--no-input', '-q', `schemathesis==${SCHEMATHESIS_VERSION}`],
    `installing schemathesis ${SCHEMATHESIS_VERSION} from PyPI`,
    log,
  );
  fs.writeFileSync(marker(), `${SCHEMATHESIS_VERSION}\n`);
  return schemathesisBin();
}
