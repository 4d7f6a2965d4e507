import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from './config';
import { KEY_NAMES, PUBLIC_DEFAULT_KEYS, devKey } from './keys';

const tmp = () => mkdtempSync(path.join(tmpdir(), 'keys-'));
const strong = {
  INTERNAL_SIGNING_KEY: 'a'.repeat(64),
  SECRET_ENCRYPTION_KEY: 'b'.repeat(64),
  CURSOR_SIGNING_KEY: 'c'.repeat(64),
};

describe('platform keys', () => {
  it('development: each key is generated once into the data folder (0600) and reused', () => {
    const dataDir = tmp();
    const first = loadConfig({ DATA_DIR: dataDir });
    const second = loadConfig({ DATA_DIR: dataDir });
    for (const name of KEY_NAMES) {
      const file = path.join(dataDir, 'keys', name);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8').trim()).toBe(first[name]);
      expect(second[name]).toBe(first[name]);
      expect(PUBLIC_DEFAULT_KEYS.has(first[name])).toBe(false);
      expect(first[name]).toMatch(/^[0-9a-f]{64}$/);
    }
    // Three different keys, and another data folder gets its own.
    expect(new Set(KEY_NAMES.map((n) => first[n])).size).toBe(3);
    expect(loadConfig({ DATA_DIR: tmp() }).INTERNAL_SIGNING_KEY).not.toBe(first.INTERNAL_SIGNING_KEY);
  });

  it('development: a key given by env wins over the generated one', () => {
    const c = loadConfig({ DATA_DIR: tmp(), ...strong });
    expect(c.SECRET_ENCRYPTION_KEY).toBe(strong.SECRET_ENCRYPTION_KEY);
  });

  it('concurrent first uses agree on one key', () => {
    const dir = tmp();
    const values = Array.from({ length: 5 }, () => devKey(dir, 'CURSOR_SIGNING_KEY'));
    expect(new Set(values).size).toBe(1);
  });

  it.each(KEY_NAMES)('production refuses a missing %s in one sentence naming it', (name) => {
    const env: Record<string, string> = { NODE_ENV: 'production', DATA_DIR: tmp(), ...strong };
    delete env[name];
    expect(() => loadConfig(env)).toThrow(new RegExp(`^${name} must be set when NODE_ENV=production[^.]*$`));
  });

  it('production refuses every value that was ever a public default', () => {
    for (const name of KEY_NAMES) {
      for (const value of PUBLIC_DEFAULT_KEYS) {
        expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: tmp(), ...strong, [name]: value })).toThrow(
          new RegExp(`^${name} is a public default value`),
        );
      }
    }
    expect(loadConfig({ NODE_ENV: 'production', DATA_DIR: tmp(), ...strong }).INTERNAL_SIGNING_KEY).toBe(
      strong.INTERNAL_SIGNING_KEY,
    );
  });
});
