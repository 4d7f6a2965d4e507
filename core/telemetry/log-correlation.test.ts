import Fastify from 'fastify';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { initTracing } from './tracing';

const file = join(mkdtempSync(join(tmpdir(), 'logcorr-')), 'log.jsonl');
process.env.LOG_FILE = file;
initTracing({ exporter: new InMemorySpanExporter(), ratio: 1 });

const lines = () =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('log lines name their trace and request', () => {
  it('carries trace_id and request_id on the access log and on lines logged inside a handler, and the caller’s trace', async () => {
    // Loaded after LOG_FILE is set: the process logger is built on first use.
    const { childLogger } = require('../logger') as typeof import('../logger');
    const { installAccessLog } = require('../access-log') as typeof import('../access-log');
    const log = childLogger('test');
    const app = Fastify({ logger: false });
    installAccessLog(app, log, 'bridge');
    app.post('/things/:id', async (req) => {
      log.info({ marker: 'inside' }, 'handling');
      return { body: req.body };
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const res = await fetch(`${url}/things/42`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': 'req-abc',
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        },
        body: JSON.stringify({ a: 1 }),
      });
      expect(res.status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      const inside = lines().find((l) => l.marker === 'inside');
      const access = lines().find((l) => l.access === 'bridge');
      expect(inside).toMatchObject({ trace_id: traceId, request_id: 'req-abc' });
      expect(access).toMatchObject({ trace_id: traceId, request_id: 'req-abc', route: '/things/:id' });
      // Outside any request: no correlation fields.
      log.info({ marker: 'outside' }, 'idle');
      expect(lines().find((l) => l.marker === 'outside')).not.toHaveProperty('trace_id');
    } finally {
      await app.close();
    }
  });
});
