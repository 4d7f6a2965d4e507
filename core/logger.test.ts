import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

describe('logger redaction', () => {
  it('prints secrets as [redacted] by key name, at any depth', () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'log-')), 'out.log');
    process.env.LOG_FILE = file;
    jest.isolateModules(() => {
      const { logger } = require('./logger') as typeof import('./logger');
      logger().info(
        {
          api_key: 'sk_live_top_level',
          headers: { authorization: 'Bearer pk_abc_secret' },
          provider: { config: { client_secret: 'cs_nested_secret', region: 'eu' } },
        },
        'configured',
      );
      logger().flush();
    });
    delete process.env.LOG_FILE;
    const line = readFileSync(file, 'utf8');
    expect(line).toContain('"region":"eu"');
    for (const secret of ['sk_live_top_level', 'pk_abc_secret', 'cs_nested_secret']) expect(line).not.toContain(secret);
    expect(line.match(/\[redacted\]/g)).toHaveLength(3);
  });
});
