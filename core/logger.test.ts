import Fastify from 'fastify';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { installAccessLog } from './access-log';
import { redactingOptions } from './logger';

/** Runs `fn` with a fresh process logger writing to a temporary file; returns the lines written. */
function captureLog(fn: (mod: typeof import('./logger')) => Promise<void> | void): Promise<any[]> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'log-')), 'out.log');
  process.env.LOG_FILE = file;
  const level = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'info';
  let done: Promise<void> | void = undefined;
  jest.isolateModules(() => {
    const mod = require('./logger') as typeof import('./logger');
    done = fn(mod);
  });
  return Promise.resolve(done).then(() => {
    delete process.env.LOG_FILE;
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
    return readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  });
}

describe('logger redaction', () => {
  it('prints secrets as [redacted] by key name, at any depth', async () => {
    const [line] = await captureLog(({ logger }) => {
      logger().info(
        {
          api_key: 'sk_live_top_level',
          headers: { authorization: 'Bearer pk_abc_secret' },
          provider: { config: { client_secret: 'cs_nested_secret', region: 'eu' } },
        },
        'configured',
      );
    });
    const text = JSON.stringify(line);
    expect(line.provider.config.region).toBe('eu');
    for (const secret of ['sk_live_top_level', 'pk_abc_secret', 'cs_nested_secret']) expect(text).not.toContain(secret);
  });

  it('masks deep paths and any case: req.body.variables.input.apiKey, Authorization, providerApiKey', async () => {
    const [line] = await captureLog(({ logger }) => {
      logger().warn(
        {
          req: {
            headers: { Authorization: 'Basic dXNlcjpodW50ZXIy', 'X-Request-Id': 'r-1' },
            body: { variables: { input: { apiKey: 'mg-key-4711-plaintext', domain: 'mg.example.com' } } },
          },
          providerApiKey: 'prov-key-0815-plaintext',
        },
        'bad request',
      );
    });
    const text = JSON.stringify(line);
    for (const secret of ['dXNlcjpodW50ZXIy', 'mg-key-4711-plaintext', 'prov-key-0815-plaintext'])
      expect(text).not.toContain(secret);
    expect(line.req.body.variables.input).toEqual({ apiKey: '[redacted]', domain: 'mg.example.com' });
    expect(line.req.headers['X-Request-Id']).toBe('r-1');
  });

  it('masks by value: secrets inside free text, messages and raw errors never print', async () => {
    const lines = await captureLog(({ logger }) => {
      const err = new Error('provider refused: api_key=mg-raw-secret-1 Authorization: Bearer tok_abcdef123');
      logger().error({ err }, 'upstream failed for https://user:hunter2@smtp.example.com');
      logger().error(err);
      logger().info({ note: 'retrying with sk_live_abcdef0123456789' }, 'retry');
    });
    const text = JSON.stringify(lines);
    for (const secret of ['mg-raw-secret-1', 'tok_abcdef123', 'hunter2', 'sk_live_abcdef0123456789'])
      expect(text).not.toContain(secret);
    expect(lines[0].err.message).toContain('provider refused');
    expect(lines[0].err.type).toBe('Error');
  });

  it('access log: method, route template, status, duration, request id; no headers or body', async () => {
    const lines: any[] = [];
    {
      const log = pino({ ...redactingOptions() }, { write: (s: string) => lines.push(JSON.parse(s)) });
      const app = Fastify({ logger: false });
      installAccessLog(app, log, 'bridge');
      app.post('/api/v1/things/:id', async () => ({ ok: true }));
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      await fetch(`${base}/api/v1/things/thing_42?token=qs-secret`, {
        method: 'POST',
        headers: { authorization: 'Bearer pk_header_secret', 'x-request-id': 'req-7', 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: 'body-secret' }),
      });
      await app.close();
    }
    const access = lines.find((l) => l.access === 'bridge');
    expect(access).toMatchObject({ method: 'POST', route: '/api/v1/things/:id', status: 200, requestId: expect.any(String) });
    expect(typeof access.durationMs).toBe('number');
    const text = JSON.stringify(lines);
    for (const s of ['thing_42', 'qs-secret', 'pk_header_secret', 'body-secret']) expect(text).not.toContain(s);
  });
});
