import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The platform's three symmetric keys. None has a built-in value: a fixed default is public (it
 * sits in this repository), so anyone who reaches a subgraph could forge a principal with it and
 * every stored provider key would be as good as plaintext.
 *
 * - Development: a key not given by env is generated once into `<DATA_DIR>/keys/<NAME>` (mode
 *   0600) and reused by every later process, so the all-in-one process, a separately started
 *   subgraph and the CLI agree without any setup.
 * - Production (`NODE_ENV=production`, as the Dockerfile sets): a missing key, or one of the
 *   values this repository ever shipped as a default, refuses to start in one sentence naming the
 *   variable (several such keys: their sentences in one message, joined by `; `).
 */
export const KEY_NAMES = ['INTERNAL_SIGNING_KEY', 'SECRET_ENCRYPTION_KEY', 'CURSOR_SIGNING_KEY'] as const;
export type KeyName = (typeof KEY_NAMES)[number];

/** Values earlier versions used as defaults; they are public and never accepted in production. */
export const PUBLIC_DEFAULT_KEYS: ReadonlySet<string> = new Set([
  'dev-internal-signing-key-change-me',
  '0000000000000000000000000000000000000000000000000000000000000000',
  'dev-cursor-signing-key-change-me',
]);

export class MissingKeyError extends Error {}

/** The sentence a production start refuses with. */
export function productionKeyProblem(name: KeyName, value: string | undefined): string | null {
  if (!value) return `${name} must be set when NODE_ENV=production (generate one with: openssl rand -hex 32)`;
  if (PUBLIC_DEFAULT_KEYS.has(value))
    return `${name} is a public default value and is refused when NODE_ENV=production (generate one with: openssl rand -hex 32)`;
  return null;
}

/** Every key a production start refuses, one sentence each (empty: the keys are fine). */
export function productionKeyProblems(env: Partial<Record<string, string>>): string[] {
  return KEY_NAMES.map((name) => productionKeyProblem(name, env[name]?.trim() || undefined)).filter(
    (p): p is string => p !== null,
  );
}

/**
 * The key stored in `<dir>/<name>`, created on first use. Creation is race-free between processes:
 * the key is written to a private temporary file and hard-linked into place, which fails when
 * another process got there first (then its key is read and used).
 */
export function devKey(dir: string, name: KeyName): string {
  const file = path.join(dir, name);
  const existing = readKeyFile(file);
  if (existing) return existing;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // 32 random bytes as hex fits every key (the encryption key needs exactly 32 bytes).
  const value = randomBytes(32).toString('hex');
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${value}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600); // the umask could have narrowed it further, never widened it; be explicit
  try {
    linkSync(tmp, file);
    return value;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const won = readKeyFile(file);
    if (!won) throw new MissingKeyError(`${file} exists but is empty`);
    return won;
  } finally {
    unlinkSync(tmp);
  }
}

function readKeyFile(file: string): string | null {
  try {
    const v = readFileSync(file, 'utf8').trim();
    return v || null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/**
 * Fills in the three keys: the env value when given (refused in production when it is a public
 * default), else in production an error, else the generated development key.
 */
export function resolveKeys(
  env: Partial<Record<KeyName, string>>,
  opts: { production: boolean; keysDir: string },
): Record<KeyName, string> {
  const out = {} as Record<KeyName, string>;
  if (opts.production) {
    const problems = productionKeyProblems(env);
    if (problems.length > 0) throw new MissingKeyError(problems.join('; '));
  }
  for (const name of KEY_NAMES) {
    const given = env[name]?.trim() || undefined;
    out[name] = opts.production ? given! : (given ?? devKey(opts.keysDir, name));
  }
  return out;
}
