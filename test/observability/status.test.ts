import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { collectStatus, formatStatus, recordProcess } from '../../cli/status';
import { projectRoot } from '../../core/paths';
import { startTestPlatform, type TestPlatform } from '../support/platform';

let t: TestPlatform;
const dir = mkdtempSync(path.join(tmpdir(), 'status-'));

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('platform status', () => {
  it('shows the running process, the engines, queue depth, the oldest pending operation, outbox backlog and consumer lag', async () => {
    const unrecord = await recordProcess(dir, { kind: 'all' }, t.platform);
    // No executor handles this type: it stays pending, the oldest in this database.
    const op = await t.platform.engine.enqueue({
      accountId: 'acct-status',
      projectId: 'p-status',
      resourceType: 'probe',
      resourceId: 'r1',
      operationType: 'status-probe',
    });
    // Consumer groups show once they have committed an offset: give the areas' consumers an event.
    const { key } = await t.createKey();
    expect((await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Status' } })).status).toBe(202);
    const read = () => collectStatus({ conn: t.platform.conn, bus: t.platform.bus, topicPrefix: `t${t.id}`, processesDir: dir });
    let report = await read();
    for (const until = Date.now() + 20_000; !report.consumer_lag?.length && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 500));
      report = await read();
    }

    expect(report.processes).toEqual([
      expect.objectContaining({ pid: process.pid, role: 'all', alive: true, ready: 'ready', bridge_url: t.bridgeUrl }),
    ]);
    expect(report.engines).toEqual({ mongodb: 'ok', kafka: 'ok' });
    expect(report.operations!.by_type).toContainEqual({ type: 'status-probe', status: 'pending', count: 1 });
    expect(report.operations!.oldest_pending).toEqual({ id: op._id, type: 'status-probe', age_s: expect.any(Number) });
    expect(report.outbox!.map((o) => o.collection)).toContain('operations');
    // The areas' consumer groups on this platform's topics, each with a lag figure.
    expect(report.consumer_lag!.length).toBeGreaterThan(0);
    for (const l of report.consumer_lag!) {
      expect(l.group.startsWith(`t${t.id}.`)).toBe(true);
      expect(l.lag).toBeGreaterThanOrEqual(0);
    }
    const text = formatStatus(report);
    expect(text).toContain(`pid ${process.pid}`);
    expect(text).toMatch(/oldest pending: status-probe/);

    // A process that is gone drops out of the list.
    await unrecord();
    expect((await collectStatus({ topicPrefix: `t${t.id}`, processesDir: dir })).processes).toEqual([]);
  });

  it('runs as `platform status --json` from the built CLI: one JSON object on the last line', async () => {
    const cfg = t.platform.config;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [path.join(projectRoot(), 'bin', 'platform.js'), 'status', '--json'],
      {
        env: {
          ...process.env,
          MONGODB_URI: cfg.mongodbUri,
          KAFKA_BROKERS: cfg.kafkaBrokers.join(','),
          KAFKA_TOPIC_PREFIX: `t${t.id}`,
          LOG_LEVEL: 'warn',
        },
        timeout: 30_000,
      },
    );
    const report = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(report).toMatchObject({ engines: { mongodb: 'ok', kafka: 'ok' }, operations: { by_type: expect.any(Array) } });
    expect(Array.isArray(report.consumer_lag)).toBe(true);
  });
});
